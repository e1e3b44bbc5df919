/*
 * fuzz-jbd.c - libFuzzer target for journal recovery (common/jbd:
 * jmap.c, rtable.c, recovery.c). EXT3D_JFUZZ_BASE names an ext3 image
 * whose journal holds transactions (jfuzz.t makes one from a kernel-written
 * log); each input replaces the journal's first blocks, journal block i
 * being input bytes [i * bs, (i + 1) * bs), written where the journal
 * inode maps them, so the superblock, descriptors, revoke and commit
 * blocks the kernel wrote are what the fuzzer mutates. Recovery then runs
 * on the image in memory. Oracles that abort: any result but 0 or
 * -EUCLEAN (the device never fails), and after a replay a journal whose
 * s_start is not 0 or a filesystem whose needs_recovery is still set.
 * Each input starts from the base again: the blocks the last run wrote
 * are restored. Logging is stubbed out (cm_log formats and drops).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "byteorder.h"
#include "internal.h"
#include "jbd2_disk.h"
#include "log.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t *fz_base, *fz_work;  /* the image as loaded, and as this run left it */
static uint8_t *fz_dirty;           /* one byte per block: written by this run */
static size_t fz_size;
static uint32_t fz_bs, fz_maxlen, fz_jsb;
static uint32_t *fz_map;            /* journal block -> fs block */

void cm_log(enum cm_log_level level, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	(void)level;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
}

int cm_log_errno(int r, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	return r;
}

static void fz_mark(uint64_t off, size_t len)
{
	for (uint64_t b = off / fz_bs; b <= (off + len - 1) / fz_bs; b++)
		fz_dirty[b] = 1;
}

static int fz_read(void *ctx, uint64_t off, void *buf, size_t len)
{
	const uint8_t *img = ctx;

	if (off > fz_size || len > fz_size - off)
		return -EIO;
	memcpy(buf, img + off, len);
	return 0;
}

static int fz_write(void *ctx, uint64_t off, const void *buf, size_t len)
{
	uint8_t *img = ctx;

	if (off > fz_size || len > fz_size - off || !len)
		return -EIO;
	memcpy(img + off, buf, len);
	if (img == fz_work)
		fz_mark(off, len);
	return 0;
}

static int fz_flush(void *ctx)
{
	(void)ctx;
	return 0;
}

static void fz_die(const char *what)
{
	fprintf(stderr, "fuzz-jbd: %s\n", what);
	abort();
}

static void fz_load(const char *path)
{
	jd_dev dev = {.read = fz_read, .write = fz_write, .flush = fz_flush};
	char why[256];
	jd_log log;
	FILE *f = fopen(path, "rb");

	if (!f || fseek(f, 0, SEEK_END) < 0)
		fz_die("cannot open EXT3D_JFUZZ_BASE");
	fz_size = (size_t)ftell(f);
	rewind(f);
	fz_base = malloc(fz_size);
	fz_work = malloc(fz_size);
	if (!fz_base || !fz_work || fread(fz_base, 1, fz_size, f) != fz_size)
		fz_die("cannot read EXT3D_JFUZZ_BASE");
	fclose(f);
	memcpy(fz_work, fz_base, fz_size);
	dev.ctx = fz_base;
	dev.size = fz_size;
	if (jd_log_open(&dev, &log, why, sizeof(why)) < 0 || !log.has_journal)
		fz_die("EXT3D_JFUZZ_BASE has no usable journal");
	fz_bs = log.bs;
	fz_maxlen = log.maxlen;
	fz_map = malloc(sizeof(*fz_map) * fz_maxlen);
	fz_dirty = calloc(fz_size / fz_bs + 1, 1);
	if (!fz_map || !fz_dirty)
		fz_die("out of memory");
	memcpy(fz_map, log.map, sizeof(*fz_map) * fz_maxlen);
	fz_jsb = fz_map[0];
	jd_log_close(&log);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *base = getenv("EXT3D_JFUZZ_BASE");

	(void)argc;
	(void)argv;
	if (!base)
		fz_die("set EXT3D_JFUZZ_BASE to an ext3 image whose journal needs recovery");
	fz_load(base);
	return 0;
}

/* After a replay: an empty log and needs_recovery clear, durably. */
static void fz_check_replayed(void)
{
	const journal_superblock_t *jsb = (const void *)(fz_work + (uint64_t)fz_jsb * fz_bs);
	const struct ext3_super_block *sb = (const void *)(fz_work + EXT3_SUPERBLOCK_OFFSET);

	if (cm_be32(jsb->s_start) != 0)
		fz_die("a replayed journal still has s_start set");
	if (cm_le32(sb->s_feature_incompat) & EXT3_FEATURE_INCOMPAT_RECOVER)
		fz_die("a replayed filesystem still has needs_recovery set");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	jd_dev dev = {.read = fz_read, .write = fz_write, .flush = fz_flush,
		      .ctx = fz_work, .size = fz_size};
	size_t n = size / fz_bs;
	jd_recovery info;
	char why[256];
	int r;

	if (n > fz_maxlen)
		n = fz_maxlen;
	for (size_t i = 0; i < n; i++) {
		memcpy(fz_work + (uint64_t)fz_map[i] * fz_bs, data + i * fz_bs, fz_bs);
		fz_dirty[fz_map[i]] = 1;
	}
	r = jd_recover(&dev, 0, NULL, &info, why, sizeof(why));
	if (r != 0 && r != -EUCLEAN)
		fz_die(why);
	if (r == 0 && info.has_journal && info.needed)
		fz_check_replayed();
	for (size_t b = 0; b < fz_size / fz_bs; b++)
		if (fz_dirty[b]) {
			memcpy(fz_work + b * fz_bs, fz_base + b * fz_bs, fz_bs);
			fz_dirty[b] = 0;
		}
	return 0;
}
