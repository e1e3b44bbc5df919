/* test-grant.c - inode-svc's per-session grant table (grant.c): counts,
 * forgets, deletion inside probe runs against a reference, the root and
 * privileged sessions, and the cap (-ENFILE, never growth without end). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "tap.h"

#define T_SPACE 5000u /* inode numbers tried: many collisions in small tables */

static void t_random_ops(ino_session *ss)
{
	static uint32_t want[T_SPACE + 1];
	unsigned seed = 7, bad = 0;

	for (int k = 0; k < 200000; k++) {
		uint32_t ino = 3 + (uint32_t)(rand_r(&seed) % (T_SPACE - 3));
		if (rand_r(&seed) % 3) {
			if (ino_grant_add(ss, ino) == 0)
				want[ino]++;
		} else {
			uint64_t n = 1 + (uint64_t)(rand_r(&seed) % 3);
			int r = ino_grant_forget(ss, ino, n);
			bad += (r == -ENOENT) != (want[ino] == 0);
			want[ino] = n < want[ino] ? want[ino] - (uint32_t)n : 0;
		}
	}
	for (uint32_t i = 3; i < T_SPACE; i++)
		bad += (ino_grant_check(ss, i) == 0) != (want[i] > 0);
	t_is_int(bad, 0, "200000 random grants and forgets agree with a reference");
}

int main(void)
{
	ino_session ss;

	memset(&ss, 0, sizeof(ss));
	ino_grants_init(&ss.grants);
	t_is_int(ino_grant_check(&ss, 12), -EACCES, "an inode never granted: EACCES");
	t_is_int(ino_grant_check(&ss, EXT3_ROOT_INO), 0, "the root is always granted");
	t_is_int(ino_grant_check(&ss, 0), -EINVAL, "inode 0: EINVAL");
	t_is_int(ino_grant_add(&ss, 12), 0, "a lookup grants");
	t_is_int(ino_grant_add(&ss, 12), 0, "a second lookup counts");
	t_is_int(ino_grant_forget(&ss, 12, 1), 0, "forget one");
	t_is_int(ino_grant_check(&ss, 12), 0, "still granted once");
	t_is_int(ino_grant_forget(&ss, 12, 1), 0, "forget the last");
	t_is_int(ino_grant_check(&ss, 12), -EACCES, "no longer granted");
	t_is_int(ino_grant_forget(&ss, 12, 1), -ENOENT, "forget of what is not held: ENOENT");
	t_random_ops(&ss);
	ino_grants_fini(&ss.grants);

	ino_grants_init(&ss.grants);
	int r = 0;
	uint32_t n = 0;
	while (n < INO_GRANTS_MAX + 10 && (r = ino_grant_add(&ss, 100 + n)) == 0)
		n++;
	t_is_int(n, INO_GRANTS_MAX, "a session holds at most %d inodes", INO_GRANTS_MAX);
	t_is_int(r, -ENFILE, "then a lookup gets ENFILE");
	t_ok(ss.grants.nslots <= 2 * INO_GRANTS_MAX, "the table stays at %u slots", ss.grants.nslots);
	t_is_int(ino_grant_add(&ss, 100), 0, "one already held still counts up");
	t_is_int(ino_grant_forget(&ss, 150, 1), 0, "a forget makes room");
	t_is_int(ino_grant_add(&ss, 1u << 30), 0, "for another inode");
	ino_grants_fini(&ss.grants);

	ss.privileged = true;
	ino_grants_init(&ss.grants);
	t_is_int(ino_grant_check(&ss, 12345), 0, "a root session names any inode");
	t_is_int(ino_grant_add(&ss, 12345), 0, "and counts its lookups too, as holds");
	t_is_int(ino_grant_check(&ss, 54321), 0, "an inode it never looked up included");
	ino_grants_fini(&ss.grants);
	return t_done();
}
