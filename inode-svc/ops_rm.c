/* ops_rm.c - names that go: unlink (anything but a directory) and rmdir
 * (an empty directory). Each is one transaction under the locks of the
 * directory and the inode; the inode's last link going frees it, or puts
 * it on the orphan list while a session still holds it (ino_op_unlinked).
 * Errors as the kernel's: ENOENT, EACCES (search, write), EPERM (sticky),
 * EISDIR / ENOTDIR for the wrong type, ENOTEMPTY, EINVAL for rmdir ".".
 */
#include <errno.h>
#include <sys/stat.h>

#include "ops.h"

#define INO_CRED_REMOVE (INO_CRED_DIR_DEL + 2 * INO_CRED_INODE + INO_CRED_TRUNCATE)

static int ino_remove(ino_session *ss, const ino_creds *c, const cm_fs_req *rq, bool isdir,
		      cm_fs_resp *rs, uint8_t *data)
{
	ino_svc *s = ss->svc;
	ino_inode dir, in;
	ino_ilockset ls;
	uint32_t inos[2], gone;
	ino_txn *t;
	int r;

	r = ino_name_check(rq->name, rq->namelen);
	if (r == 1 && !isdir)
		return -EISDIR;
	if (r == 1)
		return rq->namelen == 1 ? -EINVAL : -ENOTEMPTY;
	if (r < 0)
		return r;
	if (rq->ino > UINT32_MAX)
		return -EINVAL;
	r = ino_op_lock_entry(s, c, (uint32_t)rq->ino, rq->name, rq->namelen, &ls, &dir, &in);
	if (r < 0)
		return r;
	r = ino_perm(&dir, c, 2);
	if (r == 0)
		r = ino_perm_sticky(&dir, &in, c);
	if (r == 0 && !isdir && S_ISDIR(in.mode))
		r = -EISDIR;
	if (r == 0 && isdir && !S_ISDIR(in.mode))
		r = -ENOTDIR;
	if (r == 0 && isdir) {
		r = ino_dir_is_empty(s->fs, &in);
		r = r < 0 ? r : r == 0 ? -ENOTEMPTY : 0;
	}
	if (r == 0)
		r = ino_op_may_unlink(s, &in);
	if (r == 0)
		r = ino_txn_start(s, c, INO_CRED_REMOVE, &t);
	if (r == 0) {
		if (isdir)
			ino_op_lose_subdir(&dir);
		r = ino_dir_remove(s->fs, t, &dir, rq->name, rq->namelen, &gone);
		if (r == 0) {
			in.links = isdir || in.links == 0 ? 0 : in.links - 1;
			ino_inode_touch(t, &in, false);
			r = ino_op_unlinked(s, t, &in);
		}
		inos[0] = dir.ino;
		inos[1] = in.ino;
		int st = ino_op_stop(t, inos, 2, true);
		r = r < 0 ? r : st;
	}
	ino_iunlock(&ls);
	if (r == 0 && !isdir && (rq->flags & CM_FS_UNLINK_DIRATTR))
		ino_attr_reply_data(s, &dir, rs, data);
	return r;
}

int ino_h_unlink(ino_session *ss, const ino_creds *c, const cm_fs_req *rq, cm_fs_resp *rs,
		 uint8_t *data)
{
	if (rq->flags & ~CM_FS_UNLINK_DIRATTR)
		return -EINVAL;
	return ino_remove(ss, c, rq, false, rs, data);
}

int ino_h_rmdir(ino_session *ss, const ino_creds *c, const cm_fs_req *rq, cm_fs_resp *rs,
		uint8_t *data)
{
	return ino_remove(ss, c, rq, true, rs, data);
}
