// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Finding probe offsets: by symbol, and in stripped CPython extensions
 * through the type spec's slots. The pyenv builds keep their symbols, so
 * the spec method is checked against the real symbol in every version.
 */
#include <elf.h>
#include <fcntl.h>
#include <glob.h>
#include <stdlib.h>
#include <unistd.h>
#include <stdio.h>
#include <string.h>
#include "tracker/elfsym.h"

#include "check.h"

/* CPython's Py_tp_call slot id (Include/typeslots.h) */
#define PY_TP_CALL 50

static void test_spec_matches_symbols(void)
{
	glob_t g;
	int checked = 0;

	if (glob("/root/.pyenv/versions/3.*/lib/python3.*/lib-dynload/_json*.so", 0, NULL, &g))
		return;
	for (size_t i = 0; i < g.gl_pathc; i++) {
		const char *path = g.gl_pathv[i];
		uint64_t by_sym, by_spec;
		enum elfsym_how how;

		/* 3.8 and older have static types, no spec */
		if (strstr(path, "/3.8.") || strstr(path, "/3.7.") || strstr(path, "/3.6."))
			continue;
		CHECK(!elfsym__find(path, "encoder_call", &by_sym, &how) && how == ELFSYM_SYMTAB,
		      "%s: encoder_call symbol", path);
		CHECK(!elfsym__find_spec_slot(path, "_json.Encoder", PY_TP_CALL, &by_spec) &&
		      by_spec == by_sym, "%s: spec slot %#llx vs symbol %#llx", path,
		      (unsigned long long)by_spec, (unsigned long long)by_sym);
		CHECK(!elfsym__find(path, "scanner_call", &by_sym, &how), "%s: scanner_call", path);
		CHECK(!elfsym__find_spec_slot(path, "_json.Scanner", PY_TP_CALL, &by_spec) &&
		      by_spec == by_sym, "%s: scanner spec slot", path);
		checked++;
	}
	globfree(&g);
	CHECK(checked >= 5, "pyenv _json modules checked: %d", checked);
}

/*
 * Debian's _json is stripped. With python3.11-dbg installed (make test installs
 * it) the debug file found by build-id has the symbols: the spec method, which
 * never looks at it, must land on the same addresses.
 */
static void test_debian_stripped_json(void)
{
	uint64_t enc = 0, dec = 0, sym;
	enum elfsym_how how;
	glob_t g;
	int err;

	CHECK(!glob("/usr/lib/python3.11/lib-dynload/_json.cpython-311-x86_64*.so", 0, NULL, &g),
	      "Debian _json");
	if (!g.gl_pathc)
		return;
	CHECK(!elfsym__find_spec_slot(g.gl_pathv[0], "_json.Encoder", PY_TP_CALL, &enc) && enc,
	      "encoder_call found without symbols");
	CHECK(!elfsym__find_spec_slot(g.gl_pathv[0], "_json.Scanner", PY_TP_CALL, &dec) && dec &&
	      dec != enc, "scanner_call found without symbols");
	err = elfsym__find(g.gl_pathv[0], "encoder_call", &sym, &how);
	CHECK(err == -2 || (!err && how == ELFSYM_DEBUGFILE && sym == enc),
	      "stripped, or its debug file agrees with the spec: err %d how %d %#llx vs %#llx",
	      err, err ? -1 : (int)how, (unsigned long long)sym, (unsigned long long)enc);
	err = elfsym__find(g.gl_pathv[0], "scanner_call", &sym, &how);
	CHECK(err == -2 || (!err && sym == dec), "scanner_call debug file agrees");
	globfree(&g);
}

/*
 * A target controls the files it maps: program headers whose offsets and
 * sizes wrap around must not make the spec search read out of bounds.
 */
static void test_hostile_program_headers(void)
{
	char path[] = "/tmp/loopwatch-elfsym-XXXXXX";
	static unsigned char buf[1 << 20];
	Elf64_Ehdr *eh = (Elf64_Ehdr *)buf;
	uint64_t off;
	glob_t g;
	ssize_t n;
	int fd;

	if (glob("/usr/lib/python3.11/lib-dynload/_json.cpython-311-x86_64*.so", 0, NULL, &g) ||
	    !g.gl_pathc) {
		CHECK(0, "no Debian _json to corrupt");
		return;
	}
	fd = open(g.gl_pathv[0], O_RDONLY);
	n = fd >= 0 ? read(fd, buf, sizeof(buf)) : -1;
	if (fd >= 0)
		close(fd);
	globfree(&g);
	CHECK(n > (ssize_t)sizeof(*eh), "read _json");
	if (n <= (ssize_t)sizeof(*eh))
		return;
	for (int variant = 0; variant < 3; variant++) {
		for (int i = 0; i < eh->e_phnum; i++) {
			Elf64_Phdr *ph = (Elf64_Phdr *)(buf + eh->e_phoff) + i;

			if ((unsigned char *)(ph + 1) > buf + n || ph->p_type != PT_LOAD)
				continue;
			if (variant == 0)
				ph->p_offset = 0xfffffffffffff000ull;
			else if (variant == 1)
				ph->p_filesz = 0xfffffffffffff000ull;
			else
				ph->p_vaddr = 0xfffffffffffff000ull;
		}
		fd = mkstemp(path);
		if (fd < 0 || write(fd, buf, (size_t)n) != n) {
			CHECK(0, "write the corrupted copy");
			return;
		}
		close(fd);
		/* no crash is the test; whatever it finds must be a clean answer */
		elfsym__find_spec_slot(path, "_json.Encoder", PY_TP_CALL, &off);
		CHECK(1, "survived corrupted program headers (variant %d)", variant);
		unlink(path);
		strcpy(path, "/tmp/loopwatch-elfsym-XXXXXX");
	}
}

static void test_symbols_and_garbage(void)
{
	uint64_t off;
	enum elfsym_how how;

	CHECK(!elfsym__find("/usr/lib/x86_64-linux-gnu/libz.so.1", "compress2", &off, &how) &&
	      how == ELFSYM_DYNSYM && off, "libz compress2 via dynsym");
	CHECK(elfsym__find("/usr/lib/x86_64-linux-gnu/libz.so.1", "no_such_fn", &off, &how),
	      "absent symbol");
	CHECK(elfsym__find("/nonexistent", "x", &off, &how), "missing file");
	CHECK(elfsym__find("/etc/passwd", "x", &off, &how), "not an ELF file");
	CHECK(elfsym__find_spec_slot("/etc/passwd", "_json.Encoder", PY_TP_CALL, &off),
	      "spec in a non-ELF file");
}

int main(void)
{
	test_spec_matches_symbols();
	test_debian_stripped_json();
	test_symbols_and_garbage();
	test_hostile_program_headers();
	return check__report();
}
