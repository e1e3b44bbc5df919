/* devstat.c - counts each request in the arena's device record
 * (devstat.h): its outcome and its latency's power-of-two bucket. */
#include "futex.h"
#include "internal.h"

void bd_stat_request(cm_device *stat, uint64_t start_ns, int r)
{
	uint64_t us = (cm_now_ns() - start_ns) / 1000;
	unsigned bucket = us ? 63u - (unsigned)__builtin_clzll(us) : 0;

	if (bucket >= CM_DEV_LAT_BUCKETS)
		bucket = CM_DEV_LAT_BUCKETS - 1;
	atomic_fetch_add_explicit(&stat->lat[bucket], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&stat->requests, 1, memory_order_relaxed);
	if (r < 0)
		atomic_fetch_add_explicit(&stat->errors, 1, memory_order_relaxed);
}
