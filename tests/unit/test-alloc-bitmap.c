/* test-alloc-bitmap.c - alloc-svc's bit search and claim against a naive
 * model on seeded random bitmaps: the goal when it is usable, the next
 * usable bit before the goal's 64-bit boundary, a wholly free byte next,
 * never a bit set in the committed copy, -1 only when nothing is usable;
 * the first clear bit from a start (inodes); the count of clear bits of a
 * bitmap's first n (a group's free count at start); and a freed bit staying unusable until its committed copy is refreshed; the padding past a
 * group's last bit found set only when every bit of it is. */
#include <stdlib.h>
#include <string.h>

#include "bitmap.h"
#include "ondisk.h"
#include "tap.h"

#define T_BITS 8192
#define T_ROUNDS 20000

static uint64_t t_seed = 0x5eedULL;

static uint32_t t_rand(void)
{
	t_seed = t_seed * 6364136223846793005ULL + 1442695040888963407ULL;
	return (uint32_t)(t_seed >> 33);
}

static bool t_usable(const uint8_t *l, const uint8_t *c, uint32_t b)
{
	return !(l[b / 8] >> (b % 8) & 1) && !(c && c[b / 8] >> (b % 8) & 1);
}

/* What al_find_usable must return, by the rules in bitmap.h, done slowly. */
static int64_t t_model(const uint8_t *l, const uint8_t *c, uint32_t n, uint32_t goal)
{
	uint32_t boundary = (goal + 64) & ~63u;

	if (t_usable(l, c, goal))
		return goal;
	for (uint32_t b = goal + 1; b < boundary && b < n; b++)
		if (t_usable(l, c, b))
			return b;
	for (uint32_t byte = (goal + 7) / 8; byte * 8 + 8 <= n; byte++) {
		bool all = true;
		for (uint32_t k = 0; k < 8; k++)
			all &= t_usable(l, c, byte * 8 + k);
		if (all)
			return byte * 8;
	}
	for (uint32_t b = goal; b < n; b++)
		if (t_usable(l, c, b))
			return b;
	for (uint32_t b = 0; b < goal; b++)
		if (t_usable(l, c, b))
			return b;
	return -1;
}

static void t_random(void)
{
	static uint8_t live[T_BITS / 8], committed[T_BITS / 8];
	int bad = 0, none = 0, zbad = 0, cbad = 0;

	for (int round = 0; round < T_ROUNDS; round++) {
		/* Fullness from empty to full, so every rule gets its turn. */
		uint32_t fill = t_rand() % 1025, n = 1 + t_rand() % T_BITS, goal = t_rand() % n;
		bool with_committed = round % 2;

		for (uint32_t i = 0; i < sizeof(live); i++) {
			live[i] = committed[i] = 0;
			for (int k = 0; k < 8; k++) {
				if (t_rand() % 1024 < fill)
					live[i] |= (uint8_t)(1u << k);
				if (t_rand() % 1024 < fill / 4)
					committed[i] |= (uint8_t)(1u << k);
			}
		}
		/* Every third bitmap full up to a point, as an inode bitmap fills:
		 * whole words to pass over. */
		if (round % 3 == 2)
			for (uint32_t b = 0, full = t_rand() % n; b < full; b++)
				live[b >> 3] |= (uint8_t)(1u << (b & 7));
		const uint8_t *c = with_committed ? committed : NULL;
		int64_t got = al_find_usable(live, c, n, goal), want = t_model(live, c, n, goal);
		if (got != want && bad++ < 3)
			t_diag("n %u goal %u: got %lld, want %lld", n, goal, (long long)got,
			       (long long)want);
		none += want < 0;
		/* The inode search: the first clear bit from a start. */
		uint32_t from = t_rand() % n;
		int64_t zero = -1;
		for (uint32_t b = from; b < n && zero < 0; b++)
			if (t_usable(live, NULL, b))
				zero = b;
		zbad += al_find_zero(live, from, n) != zero;
		/* The free count the superblock's totals start from. */
		uint32_t free = 0;
		for (uint32_t b = 0; b < n; b++)
			free += t_usable(live, NULL, b);
		cbad += al_count_zero(live, n) != free;
	}
	t_is_int(cbad, 0, "the clear bits of the first n are counted (bits past n not)");
	t_is_int(zbad, 0, "and the first clear bit from a start is found");
	t_is_int(bad, 0, "%d random bitmaps: the search follows the rules", T_ROUNDS);
	t_ok(none > 0 && none < T_ROUNDS / 2, "some full bitmaps among them (%d)", none);
}

static void t_claim_release(void)
{
	uint8_t live[8] = {0}, committed[8] = {0};

	t_ok(al_claim(live, committed, 10), "claim a free bit");
	t_ok(!al_claim(live, committed, 10), "not twice");
	t_ok(al_release(live, committed, 10), "free it");
	t_ok(!al_release(live, committed, 10), "not twice");
	t_ok(!al_bit_usable(live, committed, 10), "a freed bit is not usable before the commit");
	t_ok(!al_claim(live, committed, 10), "nor claimable");
	t_is_int(al_find_usable(live, committed, 64, 10), 11, "the search passes over it");
	memcpy(committed, live, sizeof(live));
	t_ok(al_claim(live, committed, 10), "once the committed copy has the free, it is");
	t_is_int(al_find_usable(live, NULL, 0, 0), -1, "an empty bitmap has nothing");
	memset(live, 0xff, sizeof(live));
	t_is_int(al_find_usable(live, NULL, 64, 5), -1, "a full one neither");
	t_is_int(al_find_usable(live, NULL, 64, 99), -1, "a goal past the end is taken as 0");
}

/* Every padding bit of a 1 KiB bitmap of nbits cleared in turn is found;
 * the group's own bits are not looked at. */
static void t_padding(uint32_t nbits)
{
	uint8_t map[1024];
	int missed = 0;

	memset(map, 0xff, sizeof(map));
	memset(map, 0, nbits / 8);
	t_ok(cm_ext3_bitmap_padded(map, nbits, sizeof(map)), "%u bits: padding set, group's clear",
	     nbits);
	for (uint32_t b = nbits; b < 8 * sizeof(map); b++) {
		map[b / 8] &= (uint8_t)~(1u << (b % 8));
		missed += cm_ext3_bitmap_padded(map, nbits, sizeof(map));
		map[b / 8] |= (uint8_t)(1u << (b % 8));
	}
	t_is_int(missed, 0, "%u bits: each padding bit cleared is found", nbits);
}

int main(void)
{
	t_random();
	t_claim_release();
	t_padding(512);
	t_padding(4095);
	return t_done();
}
