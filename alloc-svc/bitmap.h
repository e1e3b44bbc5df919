/* bitmap.h - searching and claiming bits in a block group's bitmap the way
 * ext3's block allocator does, with the committed copy that keeps a block
 * freed by an uncommitted transaction from being handed out.
 *
 * live is the bitmap as the running transaction sees it; committed, when
 * not NULL, is the copy jbd_get_undo_access keeps (the last committed
 * image). A bit is usable when it is clear in both: a block freed by a
 * transaction that has not committed is still set in committed, and giving
 * it out would let the new owner's data overwrite it before the free is
 * durable. Callers hold the group's lock (lockset.h) and bh_state of the
 * bitmap's buffer while they read committed.
 */
#ifndef AL_BITMAP_H
#define AL_BITMAP_H

#include <stdbool.h>
#include <stdint.h>

/* True if bit is clear in live and (committed absent or) in committed. */
bool al_bit_usable(const uint8_t *live, const uint8_t *committed, uint32_t bit);
/* A usable bit in [0, nbits), searched as ext3's find_next_usable_block:
 * the goal itself; else the next usable bit up to the goal's next 64-bit
 * boundary (staying close to the goal); else the first wholly free byte
 * after the goal (room to grow); else any usable bit after the goal; else
 * before it. -1 when none is usable. goal >= nbits means 0. */
int64_t al_find_usable(const uint8_t *live, const uint8_t *committed, uint32_t nbits,
		       uint32_t goal);
/* The first clear bit of map in [from, nbits), or -1: where ext3 puts a
 * new inode in its group (inode bitmaps have no committed copy). */
int64_t al_find_zero(const uint8_t *map, uint32_t from, uint32_t nbits);
/* The clear bits of map in [0, nbits). */
uint32_t al_count_zero(const uint8_t *map, uint32_t nbits);
/* True if bit is set in map. */
bool al_test_bit(const uint8_t *map, uint32_t bit);
/* Sets bit in live if it is usable (ext3's claim_block): true if this call
 * claimed it. */
bool al_claim(uint8_t *live, const uint8_t *committed, uint32_t bit);
/* Clears bit in live and sets it in committed (if any), as a free does:
 * false if it was already clear in live. */
bool al_release(uint8_t *live, uint8_t *committed, uint32_t bit);

#endif
