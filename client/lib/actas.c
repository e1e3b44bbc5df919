/* actas.c - ext3d_act_as: the credentials a thread's calls carry. A
 * thread-local record names the handle and the credentials; x3_call_io
 * copies them into each request of that thread on that handle
 * (use_creds), which inode-svc honours because the handle attached as
 * root. No lock: the record is the thread's own. */
#include <errno.h>
#include <string.h>

#include "internal.h"

static _Thread_local struct {
	const ext3d *fs;               /* NULL: the thread acts as the process */
	cm_fs_creds creds;
	uint32_t flags;                /* CM_FS_CREDS_* */
} x3_act;

_Static_assert(EXT3D_MAX_GROUPS == CM_FS_MAX_GROUPS, "ext3d.h's group limit is fsproto.h's");

int ext3d_act_as(ext3d *fs, const ext3d_creds *c)
{
	if (!c) {
		if (x3_act.fs == fs)
			x3_act.fs = NULL;
		return 0;
	}
	if (!fs->root)
		return -EPERM;
	if (c->ngroups > EXT3D_MAX_GROUPS)
		return -EINVAL;
	x3_act.creds = (cm_fs_creds){.uid = c->uid, .gid = c->gid, .ngroups = c->ngroups};
	x3_act.flags = c->flags & EXT3D_CREDS_CHECKED ? CM_FS_CREDS_CHECKED : 0;
	memcpy(x3_act.creds.groups, c->groups, c->ngroups * sizeof(c->groups[0]));
	x3_act.fs = fs;
	return 0;
}

void x3_act_apply(const ext3d *fs, cm_fs_req *req)
{
	if (x3_act.fs != fs)
		return;
	req->use_creds = 1;
	req->creds = x3_act.creds;
	req->creds_flags = x3_act.flags;
}
