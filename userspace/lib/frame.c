// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "lib/text.h"
#include "lib/frame.h"

int frame__format(const struct frame *f, char *buf, size_t len)
{
	int fn_len, mod_len, file_len;
	const char *fn;

	if (!f || (!buf && len))
		return -1;
	/* the frame may come from elsewhere: never trust its NUL termination */
	fn_len = (int)strnlen(f->func, sizeof(f->func));
	mod_len = (int)strnlen(f->module, sizeof(f->module));
	file_len = (int)strnlen(f->file, sizeof(f->file));
	fn = f->func;
	if (!fn_len) {
		fn = "[unknown]";
		fn_len = (int)strlen(fn);
	}
	if (f->kind == FRAME_JIT && f->line && f->column)
		return snprintf(buf, len, "%.*s (%.*s:%d:%d)", fn_len, fn, file_len, f->file,
				f->line, f->column);
	if ((frame__is_script(f) || f->kind == FRAME_JIT) && file_len)
		return snprintf(buf, len, "%.*s (%.*s:%d)", fn_len, fn, file_len, f->file,
				f->line);
	/* a marker ("[3 unknown frames]") names no symbol: no offset into one */
	if (f->func[0] && f->func[0] != '[') {
		if (mod_len)
			return snprintf(buf, len, "%.*s+0x%" PRIx64 " (%.*s)", fn_len, fn,
					f->offset, mod_len, f->module);
		return snprintf(buf, len, "%.*s+0x%" PRIx64, fn_len, fn, f->offset);
	}
	if (mod_len)
		return snprintf(buf, len, "%.*s (%.*s)", fn_len, fn, mod_len, f->module);
	return snprintf(buf, len, "%.*s", fn_len, fn);
}

void frame__marker(struct frame *f, enum frame_kind kind, const char *text)
{
	memset(f, 0, sizeof(*f));
	f->kind = kind;
	snprintf(f->func, sizeof(f->func), "%s", text);
}

void frames_out__put(struct frames_out *o, const struct frame *f)
{
	if (o->n < o->max)
		o->v[o->n++] = *f;
}

void frame__sanitize(struct frame *f)
{
	f->func[sizeof(f->func) - 1] = '\0';
	f->func_raw[sizeof(f->func_raw) - 1] = '\0';
	f->module[sizeof(f->module) - 1] = '\0';
	f->file[sizeof(f->file) - 1] = '\0';
	str__sanitize(f->func);
	str__sanitize(f->func_raw);
	str__sanitize(f->module);
	str__sanitize(f->file);
}
