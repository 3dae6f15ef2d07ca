// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A small mutation driver for the fuzz targets (the libFuzzer entry point,
 * so a target also links with -fsanitize=fuzzer): seeds from files, then
 * bit flips, random bytes, cuts, duplications and splices for SECONDS, under
 * ASan and UBSan (make check-sanitize). Deterministic per seed value.
 *
 * usage: fuzz_X SECONDS [SEED_FILE...]
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_INPUT (8u << 20)

struct seed {
	uint8_t *data;
	size_t len;
};

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static bool file__read(const char *path, struct seed *s)
{
	FILE *f = fopen(path, "rb");
	size_t n;

	if (!f)
		return false;
	s->data = malloc(MAX_INPUT);
	n = s->data ? fread(s->data, 1, MAX_INPUT, f) : 0;
	fclose(f);
	s->len = n;
	return n > 0;
}

static size_t mutate(uint8_t *buf, size_t len, const struct seed *other)
{
	int rounds = 1 + (int)(rnd() % 16);

	for (int r = 0; r < rounds && len; r++) {
		size_t at = rnd() % len, n;

		switch (rnd() % 7) {
		case 0:
			buf[at] ^= (uint8_t)(1u << (rnd() % 8));
			break;
		case 1:
			buf[at] = (uint8_t)rnd();
			break;
		case 2: /* an interesting value where a field may be */
			buf[at] = (uint8_t[]){ 0, 0xff, 0x7f, 0x80, 1, 0x20 }[rnd() % 6];
			break;
		case 3:
			len = at + 1;
			break;
		case 4:
			n = rnd() % 64;
			if (len + n <= MAX_INPUT && n <= len - at) {
				memmove(buf + at + n, buf + at, len - at);
				len += n;
			}
			break;
		case 5:
			n = rnd() % 64;
			if (n > len - at)
				n = len - at;
			memmove(buf + at, buf + at + n, len - at - n);
			len -= n;
			break;
		default:
			if (other->len) {
				size_t from = rnd() % other->len;

				n = rnd() % 256;
				if (n > other->len - from)
					n = other->len - from;
				if (n > len - at)
					n = len - at;
				memcpy(buf + at, other->data + from, n);
			}
			break;
		}
	}
	return len;
}

int main(int argc, char **argv)
{
	struct seed seeds[16] = {}, fallback = { (uint8_t *)"seed", 4 };
	int nseeds = 0;
	double seconds = argc > 1 ? atof(argv[1]) : 5;
	uint8_t *buf = malloc(MAX_INPUT);
	unsigned long runs = 0;
	time_t end = time(NULL) + (time_t)seconds;

	for (int i = 2; i < argc && nseeds < 16; i++) {
		if (file__read(argv[i], &seeds[nseeds]))
			nseeds++;
	}
	if (!nseeds)
		seeds[nseeds++] = fallback;
	if (!buf)
		return 1;
	for (int i = 0; i < nseeds; i++)
		LLVMFuzzerTestOneInput(seeds[i].data, seeds[i].len);
	while (time(NULL) < end) {
		const struct seed *s = &seeds[rnd() % (uint64_t)nseeds];
		size_t len = s->len;

		memcpy(buf, s->data, len);
		len = mutate(buf, len, &seeds[rnd() % (uint64_t)nseeds]);
		LLVMFuzzerTestOneInput(buf, len);
		runs++;
	}
	printf("%s: %lu inputs in %.0f s, no memory error\n", argv[0], runs, seconds);
	free(buf);
	for (int i = 0; i < nseeds; i++) {
		if (seeds[i].data != fallback.data)
			free(seeds[i].data);
	}
	return 0;
}
