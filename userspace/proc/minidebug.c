// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <lzma.h>
#include <stdlib.h>
#include "proc/minidebug.h"

/*
 * What liblzma may allocate to read the index and to decode: MiniDebugInfo
 * is written with xz's presets (a dictionary of at most 64 MiB at -9); a
 * stream that asks for more is refused rather than decoded.
 */
#define MINIDEBUG_MEMLIMIT (96ull << 20)

/*
 * The uncompressed size the stream's index claims (its footer, then the
 * index it points back to); 0 when the bytes are not one xz stream.
 */
static uint64_t xz__claimed_size(const uint8_t *xz, size_t len)
{
	lzma_stream_flags footer;
	lzma_index *index = NULL;
	uint64_t memlimit = MINIDEBUG_MEMLIMIT, size;
	size_t pos;

	if (len < 2 * LZMA_STREAM_HEADER_SIZE ||
	    lzma_stream_footer_decode(&footer, xz + len - LZMA_STREAM_HEADER_SIZE) != LZMA_OK ||
	    footer.backward_size > len - 2 * LZMA_STREAM_HEADER_SIZE)
		return 0;
	pos = len - LZMA_STREAM_HEADER_SIZE - footer.backward_size;
	if (lzma_index_buffer_decode(&index, &memlimit, NULL, xz, &pos,
				     len - LZMA_STREAM_HEADER_SIZE) != LZMA_OK)
		return 0;
	size = lzma_index_uncompressed_size(index);
	lzma_index_end(index, NULL);
	return size;
}

int minidebug__open_xz(const uint8_t *xz, size_t len, struct elf_handle *out)
{
	uint64_t claim = xz__claimed_size(xz, len), memlimit = MINIDEBUG_MEMLIMIT;
	size_t in_pos = 0, out_pos = 0;
	uint8_t *image;
	int err;

	out->fd = -1;
	out->elf = NULL;
	out->image = NULL;
	if (!claim || claim > SIZE_MAX)
		return -EINVAL;
	/* the claim is checked before anything is allocated for it */
	err = elf__inflate_admit(claim);
	if (err)
		return err;
	image = malloc(claim);
	if (!image)
		return -ENOMEM;
	/*
	 * The output buffer is exactly the claim: a stream that decodes to more
	 * (its index lying) stops at LZMA_BUF_ERROR, and the decoder checks the
	 * index against the blocks it decoded.
	 */
	if (lzma_stream_buffer_decode(&memlimit, 0, NULL, xz, &in_pos, len, image, &out_pos,
				      claim) != LZMA_OK || out_pos != claim) {
		free(image);
		return -EINVAL;
	}
	return elf__open_image(out, image, claim);
}

int minidebug__open(const struct elf_handle *h, struct elf_handle *out)
{
	struct elf_section sec;
	int err = elf__section(h, ".gnu_debugdata", &sec);

	out->fd = -1;
	out->elf = NULL;
	out->image = NULL;
	if (err)
		return err == -E2BIG ? err : -ENOENT;
	return minidebug__open_xz(sec.data->d_buf, sec.data->d_size, out);
}
