// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * MiniDebugInfo (proc/minidebug.c): an xz'd ELF read back whole, its
 * symbols the original's; what is not one xz stream of an ELF refused; a
 * stream whose index claims more than the inflation budget refused before
 * anything is allocated for it.
 */
#include <errno.h>
#include <fcntl.h>
#include <lzma.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "proc/minidebug.h"

#include "check.h"

static uint8_t *file__read(const char *path, size_t *len)
{
	struct stat st;
	uint8_t *buf = NULL;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || fstat(fd, &st) || !(buf = malloc(st.st_size)) ||
	    read(fd, buf, st.st_size) != st.st_size) {
		free(buf);
		buf = NULL;
	}
	if (fd >= 0)
		close(fd);
	*len = buf ? (size_t)st.st_size : 0;
	return buf;
}

/* in compressed to one xz stream (preset 0), fed from a buffer of chunk bytes repeat times */
static uint8_t *xz__compress(const uint8_t *in, size_t chunk, size_t repeat, size_t *len)
{
	lzma_stream s = LZMA_STREAM_INIT;
	size_t cap = chunk + (64u << 20) / 64 + 4096;
	uint8_t *out = malloc(cap);
	lzma_ret r = LZMA_OK;

	if (!out || lzma_easy_encoder(&s, 0, LZMA_CHECK_CRC64) != LZMA_OK) {
		free(out);
		return NULL;
	}
	s.next_out = out;
	s.avail_out = cap;
	for (size_t i = 0; i <= repeat && r == LZMA_OK; i++) {
		s.next_in = in;
		s.avail_in = i < repeat ? chunk : 0;
		do {
			r = lzma_code(&s, i < repeat ? LZMA_RUN : LZMA_FINISH);
		} while (r == LZMA_OK && (s.avail_in || i == repeat) && s.avail_out);
	}
	*len = s.total_out;
	lzma_end(&s);
	if (r != LZMA_STREAM_END) {
		free(out);
		return NULL;
	}
	return out;
}

struct count {
	size_t n;
	bool main_seen;
};

static int symbol__count(const struct elf_symbol *sym, void *ctx)
{
	struct count *c = ctx;

	c->n++;
	c->main_seen |= !strcmp(sym->name, "main");
	return 0;
}

static void test_round_trip(void)
{
	struct count mine = { 0 }, back = { 0 };
	struct elf_handle h, out;
	size_t len, xzlen;
	uint8_t *self = file__read("/proc/self/exe", &len), *xz;

	CHECK(self && !elf__open(&h, "/proc/self/exe"), "our own file");
	if (!self)
		return;
	elf__symbols(&h, SHT_SYMTAB, symbol__count, &mine);
	elf__close(&h);
	xz = xz__compress(self, len, 1, &xzlen);
	CHECK(xz && xzlen < len, "compressed: %zu of %zu bytes", xzlen, len);
	if (!xz) {
		free(self);
		return;
	}
	CHECK(!minidebug__open_xz(xz, xzlen, &out), "the xz'd ELF opens");
	elf__symbols(&out, SHT_SYMTAB, symbol__count, &back);
	CHECK(mine.n > 50 && back.n == mine.n && back.main_seen, "symbols: %zu, back %zu",
	      mine.n, back.n);
	elf__close(&out);

	/* cut short, a flipped byte inside, not xz, xz of what is not ELF: refused */
	CHECK(minidebug__open_xz(xz, xzlen - 1, &out) == -EINVAL, "cut stream");
	xz[xzlen / 2] ^= 0x55;
	CHECK(minidebug__open_xz(xz, xzlen, &out) == -EINVAL, "corrupt stream");
	CHECK(minidebug__open_xz(self, len, &out) == -EINVAL, "not xz");
	CHECK(minidebug__open_xz(xz, 3, &out) == -EINVAL, "3 bytes");
	free(xz);
	xz = xz__compress((const uint8_t *)"not an ELF file", 15, 1, &xzlen);
	CHECK(xz && minidebug__open_xz(xz, xzlen, &out) == -ENOEXEC, "xz of text");
	free(xz);
	free(self);
}

static void test_budget(void)
{
	unsigned long refused = elf__inflate_refused();
	uint8_t *zeros = calloc(1, 1u << 20), *xz;
	struct elf_handle out;
	size_t xzlen;

	/* 257 MiB of zeros: a few KB of xz whose index says so */
	xz = zeros ? xz__compress(zeros, 1u << 20, 257, &xzlen) : NULL;
	CHECK(xz && xzlen < (1u << 20), "257 MiB of zeros in %zu bytes", xz ? xzlen : 0);
	if (xz) {
		CHECK(minidebug__open_xz(xz, xzlen, &out) == -E2BIG, "over the file budget");
		CHECK(elf__inflate_refused() == refused + 1, "refusal counted");
	}
	free(xz);
	free(zeros);
}

int main(void)
{
	test_round_trip();
	test_budget();
	return check__report();
}
