/*
 * dirhash.c - the htree name hashes (ext3fs_dirhash): legacy (dx_hack_hash),
 * half MD4 and TEA, each with signed or unsigned treatment of name bytes
 * (versions 0-2 and 3-5).  Pure functions, no state.
 *
 * The seed is the superblock's s_hash_seed in host order; an all-zero seed
 * means the MD4 initial values.  The result has bit 0 clear (the index
 * uses it to mark collision runs), and the one value that would read as
 * the end-of-directory marker is moved down, as the kernel does.
 */
#include "internal.h"

#include <errno.h>
#include <string.h>

#define TEA_DELTA	0x9E3779B9u
#define HTREE_EOF	0x7fffffffu

static uint32_t rol32(uint32_t x, unsigned s)
{
	return (x << s) | (x >> (32 - s));
}

/* One name byte as the hash sees it: char is signed unless `unsig`. */
static uint32_t name_byte(const char *name, size_t i, bool unsig)
{
	if (unsig)
		return (uint8_t)name[i];
	return (uint32_t)(int32_t)(int8_t)name[i];
}

static void tea_transform(uint32_t buf[4], const uint32_t in[4])
{
	uint32_t sum = 0, b0 = buf[0], b1 = buf[1];
	int n;

	for (n = 0; n < 16; n++) {
		sum += TEA_DELTA;
		b0 += ((b1 << 4) + in[0]) ^ (b1 + sum) ^ ((b1 >> 5) + in[1]);
		b1 += ((b0 << 4) + in[2]) ^ (b0 + sum) ^ ((b0 >> 5) + in[3]);
	}
	buf[0] += b0;
	buf[1] += b1;
}

#define MD4_F(x, y, z)	((z) ^ ((x) & ((y) ^ (z))))
#define MD4_G(x, y, z)	(((x) & (y)) + (((x) ^ (y)) & (z)))
#define MD4_H(x, y, z)	((x) ^ (y) ^ (z))
#define MD4_K2		013240474631u
#define MD4_K3		015666365641u
#define MD4_STEP(f, a, b, c, d, x, s)	((a) = rol32((a) + f(b, c, d) + (x), s))

/* MD4 cut down to three rounds of eight steps over 8 words. */
static void half_md4_transform(uint32_t buf[4], const uint32_t in[8])
{
	static const unsigned r2[8] = { 1, 3, 5, 7, 0, 2, 4, 6 };
	static const unsigned r3[8] = { 3, 7, 2, 6, 1, 5, 0, 4 };
	static const unsigned s1[4] = { 3, 7, 11, 19 };
	static const unsigned s2[4] = { 3, 5, 9, 13 };
	static const unsigned s3[4] = { 3, 9, 11, 15 };
	uint32_t v[4] = { buf[0], buf[1], buf[2], buf[3] };
	unsigned i;

	/* step i updates v[(4 - i) % 4] from the next three, rotating */
	for (i = 0; i < 8; i++)
		MD4_STEP(MD4_F, v[(4 - i % 4) % 4], v[(5 - i % 4) % 4],
			 v[(6 - i % 4) % 4], v[(7 - i % 4) % 4], in[i],
			 s1[i % 4]);
	for (i = 0; i < 8; i++)
		MD4_STEP(MD4_G, v[(4 - i % 4) % 4], v[(5 - i % 4) % 4],
			 v[(6 - i % 4) % 4], v[(7 - i % 4) % 4],
			 in[r2[i]] + MD4_K2, s2[i % 4]);
	for (i = 0; i < 8; i++)
		MD4_STEP(MD4_H, v[(4 - i % 4) % 4], v[(5 - i % 4) % 4],
			 v[(6 - i % 4) % 4], v[(7 - i % 4) % 4],
			 in[r3[i]] + MD4_K3, s3[i % 4]);
	for (i = 0; i < 4; i++)
		buf[i] += v[i];
}

static uint32_t legacy_hash(const char *name, size_t len, bool unsig)
{
	uint32_t hash, hash0 = 0x12a3fe2d, hash1 = 0x37abe8f9;
	size_t i;

	for (i = 0; i < len; i++) {
		hash = hash1 + (hash0 ^ (name_byte(name, i, unsig) * 7152373u));
		if (hash & 0x80000000u)
			hash -= 0x7fffffff;
		hash1 = hash0;
		hash0 = hash;
	}
	return hash0 << 1;
}

/*
 * Packs up to num * 4 name bytes into num words, big-end first, padding
 * with a word made of the (whole) name length.
 */
static void str2hashbuf(const char *msg, size_t len, uint32_t *buf,
			unsigned num, bool unsig)
{
	uint32_t pad, val;
	size_t i, n = len > num * 4 ? num * 4 : len;
	unsigned w = 0;

	pad = (uint32_t)len | ((uint32_t)len << 8);
	pad |= pad << 16;
	val = pad;
	for (i = 0; i < n; i++) {
		val = name_byte(msg, i, unsig) + (val << 8);
		if (i % 4 == 3) {
			buf[w++] = val;
			val = pad;
		}
	}
	if (w < num)
		buf[w++] = val;
	while (w < num)
		buf[w++] = pad;
}

int ino_hash(unsigned version, const uint32_t seed[4], const char *name,
	     size_t namelen, uint32_t *ret_hash, uint32_t *ret_minor)
{
	uint32_t buf[4] = { 0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476 };
	uint32_t in[8], hash, minor = 0;
	bool unsig = version >= EXT3_DX_HASH_LEGACY_UNSIGNED;
	size_t off;

	if (seed && (seed[0] | seed[1] | seed[2] | seed[3]))
		memcpy(buf, seed, sizeof(buf));
	switch (version) {
	case EXT3_DX_HASH_LEGACY:
	case EXT3_DX_HASH_LEGACY_UNSIGNED:
		hash = legacy_hash(name, namelen, unsig);
		break;
	case EXT3_DX_HASH_HALF_MD4:
	case EXT3_DX_HASH_HALF_MD4_UNSIGNED:
		for (off = 0; off < namelen; off += 32) {
			str2hashbuf(name + off, namelen - off, in, 8, unsig);
			half_md4_transform(buf, in);
		}
		hash = buf[1];
		minor = buf[2];
		break;
	case EXT3_DX_HASH_TEA:
	case EXT3_DX_HASH_TEA_UNSIGNED:
		for (off = 0; off < namelen; off += 16) {
			str2hashbuf(name + off, namelen - off, in, 4, unsig);
			tea_transform(buf, in);
		}
		hash = buf[0];
		minor = buf[1];
		break;
	default:
		return -EINVAL;
	}
	hash &= ~1u;
	if (hash == HTREE_EOF << 1)
		hash = (HTREE_EOF - 1) << 1;
	*ret_hash = hash;
	if (ret_minor)
		*ret_minor = minor;
	return 0;
}
