/* fserror.c - a write that met a corrupt structure, as the kernel's
 * ext4_error: the error is recorded in the superblock in a transaction of
 * its own, committed at once (s_state's ERROR_FS bit, which e2fsck reads,
 * s_error_count, and the first and last error's time, inode, function and
 * code, as ext4 writes them), then the superblock's errors behaviour
 * (tune2fs -e) decides: continue; remount-ro, after which every write of
 * this instance gets EROFS (the arena's fs_errors, which status shows);
 * panic, after which inode-svc exits and the supervisor restarts the
 * group, as a panicking kernel reboots. The operation itself changed
 * nothing it had not validated (ino_map_check). fserr_mtx (process-private,
 * a leaf taken with no inode lock and no handle) serialises the records. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "log.h"

static pthread_mutex_t fserr_mtx = PTHREAD_MUTEX_INITIALIZER;

/* The record, durable when it returns 0. */
static int ino_fserror_record(ino_svc *s, const char *func, uint32_t ino)
{
	ino_txn *t;
	int r, st;

	r = ino_txn_start(s, NULL, INO_CRED_SB, &t);
	if (r < 0)
		return r;
	r = ino_sb_error(s->fs, t, func, ino);
	st = ino_txn_stop(t, NULL);
	r = r < 0 ? r : st;
	return r < 0 ? r : ino_txn_sync(s);
}

bool ino_fserror_read_only(ino_svc *s)
{
	return atomic_load(&s->svc.layout->fs_errors.read_only) != 0 ||
	       atomic_load(&s->svc.layout->device.read_only) != 0;
}

void ino_fserror(ino_svc *s, const char *op, uint64_t ino)
{
	cm_fs_errors *fe = &s->svc.layout->fs_errors;
	uint16_t behaviour = ino_fs_errors_behaviour(s->fs);
	char func[40];
	int r;

	if (!s->jc || ino_fserror_read_only(s))
		return;
	snprintf(func, sizeof(func), "ino_h_%s", op);
	pthread_mutex_lock(&fserr_mtx);
	r = ino_fserror_record(s, func, ino <= UINT32_MAX ? (uint32_t)ino : 0);
	snprintf(fe->last, sizeof(fe->last), "%s ino=%llu: %s", op, (unsigned long long)ino,
		 strerror(EUCLEAN));
	atomic_fetch_add(&fe->count, 1);
	if (r < 0)
		cm_log_errno(r, "recording the error in the superblock: %m, ignoring");
	if (behaviour == EXT3_ERRORS_CONTINUE) {
		cm_err("%s ino=%llu met a corrupt structure (errors=continue)", op,
		       (unsigned long long)ino);
	} else if (behaviour == EXT3_ERRORS_PANIC) {
		cm_err("%s ino=%llu met a corrupt structure: panic (errors=panic)", op,
		       (unsigned long long)ino);
		_exit(EXIT_FAILURE);
	} else {
		atomic_store(&fe->read_only, 1);
		cm_err("%s ino=%llu met a corrupt structure: remounting read-only "
		       "(errors=remount-ro); every later write gets EROFS", op,
		       (unsigned long long)ino);
	}
	pthread_mutex_unlock(&fserr_mtx);
}
