/* bitmap.c - the bit search and claim of ext3's block allocator on one
 * group's bitmap and its committed copy (bitmap.h). Bits are little-endian
 * within bytes, as ext3 stores them. */
#include "bitmap.h"

#include <endian.h>
#include <stddef.h>
#include <string.h>

static bool al_test(const uint8_t *map, uint32_t bit)
{
	return map[bit >> 3] & (1u << (bit & 7));
}

bool al_test_bit(const uint8_t *map, uint32_t bit)
{
	return al_test(map, bit);
}

bool al_bit_usable(const uint8_t *live, const uint8_t *committed, uint32_t bit)
{
	return !al_test(live, bit) && (!committed || !al_test(committed, bit));
}

/* The 64 bits of map from bit (a multiple of 64) on: bit k of the word is
 * the map's bit + k, whatever the host's byte order. */
static uint64_t al_word(const uint8_t *map, uint32_t bit)
{
	uint64_t w;

	memcpy(&w, map + (bit >> 3), sizeof(w));
	return le64toh(w);
}

/* The first usable bit in [from, to), or -1. Whole words at a time where
 * they fit: a group's inode bitmap fills from the start, and the search
 * for the lowest free inode crosses the full part on every create. */
static int64_t al_scan(const uint8_t *live, const uint8_t *committed, uint32_t from,
		       uint32_t to)
{
	uint32_t bit = from;

	while (bit < to) {
		if ((bit & 63) == 0 && bit + 64 <= to) {
			uint64_t used = al_word(live, bit) | (committed ? al_word(committed, bit) : 0);

			if (used != UINT64_MAX)
				return bit + (uint32_t)__builtin_ctzll(~used);
			bit += 64;
			continue;
		}
		if (al_bit_usable(live, committed, bit))
			return bit;
		bit++;
	}
	return -1;
}

/* The first bit of a byte wholly free in both maps in [from, to), or -1. */
static int64_t al_scan_free_byte(const uint8_t *live, const uint8_t *committed,
				 uint32_t from, uint32_t to)
{
	for (uint32_t byte = (from + 7) >> 3; (byte + 1) * 8 <= to; byte++)
		if (live[byte] == 0 && (!committed || committed[byte] == 0))
			return (int64_t)byte * 8;
	return -1;
}

int64_t al_find_usable(const uint8_t *live, const uint8_t *committed, uint32_t nbits,
		       uint32_t goal)
{
	uint32_t boundary;
	int64_t bit;

	if (nbits == 0)
		return -1;
	if (goal >= nbits)
		goal = 0;
	if (al_bit_usable(live, committed, goal))
		return goal;
	boundary = (goal + 64) & ~63u;
	if (boundary > nbits)
		boundary = nbits;
	if ((bit = al_scan(live, committed, goal + 1, boundary)) >= 0)
		return bit;
	if ((bit = al_scan_free_byte(live, committed, goal, nbits)) >= 0)
		return bit;
	if ((bit = al_scan(live, committed, goal, nbits)) >= 0)
		return bit;
	return al_scan(live, committed, 0, goal);
}

int64_t al_find_zero(const uint8_t *map, uint32_t from, uint32_t nbits)
{
	return al_scan(map, NULL, from, nbits);
}

bool al_claim(uint8_t *live, const uint8_t *committed, uint32_t bit)
{
	if (!al_bit_usable(live, committed, bit))
		return false;
	live[bit >> 3] |= (uint8_t)(1u << (bit & 7));
	return true;
}

bool al_release(uint8_t *live, uint8_t *committed, uint32_t bit)
{
	if (!al_test(live, bit))
		return false;
	if (committed)
		committed[bit >> 3] |= (uint8_t)(1u << (bit & 7));
	live[bit >> 3] &= (uint8_t)~(1u << (bit & 7));
	return true;
}

uint32_t al_count_zero(const uint8_t *map, uint32_t nbits)
{
	uint32_t set = 0, i;

	for (i = 0; i + 8 <= nbits; i += 8)
		set += (uint32_t)__builtin_popcount(map[i / 8]);
	for (; i < nbits; i++)
		set += al_test_bit(map, i);
	return nbits - set;
}
