/* dispatch.c - one client request: check it, check that the session may
 * name the inode it names (ino_grant_check, in ino_dispatch for every op
 * marked by_ino), check permissions against the caller's credentials, run
 * it on the filesystem, fill the response. Lookups (and granting readdirs)
 * grant the inodes they return. Every field of the request is
 * client-controlled. Corrupt on-disk structures come back from the
 * filesystem core as -EUCLEAN (already logged there); met by an operation
 * that may write, they are recorded as an error of the filesystem. */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "ops.h"
#include "log.h"

static int ino_get(ino_session *ss, uint64_t ino, ino_inode *in)
{
	return ino_op_read(ss->svc, ino, in);
}

static int ino_h_getattr(ino_session *ss, const ino_creds *c, const cm_fs_req *rq,
			 cm_fs_resp *rs, uint8_t *data)
{
	ino_inode in;
	int r = ino_get(ss, rq->ino, &in);

	if (r == 0)
		ino_attr_fill(ss->svc, &in, &rs->attr);
	return r;
}

static int ino_h_lookup(ino_session *ss, const ino_creds *c, const cm_fs_req *rq,
			cm_fs_resp *rs, uint8_t *data)
{
	ino_inode dir, in;
	uint32_t ino;
	int r;

	if (rq->namelen == 0 || rq->namelen > CM_FS_NAME_MAX)
		return rq->namelen ? -ENAMETOOLONG : -EINVAL;
	if (memchr(rq->name, '/', rq->namelen) || memchr(rq->name, '\0', rq->namelen))
		return -EINVAL;
	r = ino_get(ss, rq->ino, &dir);
	if (r == 0 && !S_ISDIR(dir.mode))
		r = -ENOTDIR;
	if (r == 0)
		r = ino_perm(&dir, c, 1);
	if (r == 0)
		r = ino_dir_lookup(ss->svc->fs, &dir, rq->name, rq->namelen, &ino);
	if (r == 0)
		r = ino_inode_read(ss->svc->fs, ino, &in);
	if (r == 0)
		r = ino_grant_add(ss, ino);
	if (r == 0)
		ino_attr_fill(ss->svc, &in, &rs->attr);
	return r;
}

/* The smallest record a readdir entry takes in the data buffer. */
#define INO_READDIR_MIN_REC ((uint32_t)(sizeof(cm_fs_dirent) + 8))

struct ino_readdir_ctx {
	ino_session *ss;
	uint8_t *data;
	uint32_t used, cap;
	bool plus;      /* attributes with each entry */
	bool search;    /* the caller may search the directory: attributes are filled */
	bool grant;     /* each entry with attributes is granted */
	cm_fs_resp *rs;
};

static int ino_readdir_one(void *arg, uint32_t ino, uint8_t type, const char *name,
			   size_t namelen, uint64_t next)
{
	struct ino_readdir_ctx *x = arg;
	uint32_t reclen = (uint32_t)((sizeof(cm_fs_dirent) + namelen + 7) & ~(size_t)7);
	cm_fs_dirent de = {.ino = ino, .next = next, .type = type, .namelen = (uint8_t)namelen};
	ino_inode in;

	if (x->plus)
		reclen += sizeof(cm_fs_attr);
	if (x->used + reclen > x->cap)
		return 1;
	de.reclen = (uint16_t)reclen;
	memcpy(x->data + x->used, &de, sizeof(de));
	memcpy(x->data + x->used + sizeof(de), name, namelen);
	if (x->plus) {
		cm_fs_attr *a = (cm_fs_attr *)(x->data + x->used + reclen - sizeof(cm_fs_attr));
		bool dots = (namelen == 1 && name[0] == '.') ||
			    (namelen == 2 && name[0] == '.' && name[1] == '.');
		memset(a, 0, sizeof(*a));
		if (x->search && ino_inode_read(x->ss->svc->fs, ino, &in) == 0) {
			/* As FUSE's readdirplus: "." and ".." are not granted. */
			int r = x->grant && !dots ? ino_grant_add(x->ss, ino) : 0;
			if (r < 0)
				return x->rs->count ? 1 : r;
			ino_attr_fill(x->ss->svc, &in, a);
		}
	}
	x->used += reclen;
	x->rs->count++;
	x->rs->next = next;
	return 0;
}

static int ino_h_readdir(ino_session *ss, const ino_creds *c, const cm_fs_req *rq,
			 cm_fs_resp *rs, uint8_t *data)
{
	struct ino_readdir_ctx x = {
		.ss = ss, .data = data, .rs = rs, .plus = rq->flags & CM_FS_READDIR_PLUS,
		.cap = rq->length < CM_SEG_DATA ? rq->length : CM_SEG_DATA,
	};
	ino_inode dir;
	int r = ino_get(ss, rq->ino, &dir);

	if (r == 0 && !S_ISDIR(dir.mode))
		r = -ENOTDIR;
	if (r == 0)
		r = ino_perm(&dir, c, 4);
	x.search = r == 0 && ino_perm(&dir, c, 1) == 0;
	x.grant = rq->flags & CM_FS_READDIR_GRANT;
	rs->next = rq->offset;
	/* The batch runs under the directory's lock, shared (ino_dispatch), as
	 * the kernel's iterate_shared under i_rwsem: writers wait. Between
	 * batches they do not, hence the hash-order cookies of ino_dir_readdir. */
	if (r == 0)
		r = ino_dir_readdir(ss->svc->fs, &dir, rq->offset,
				    x.cap / INO_READDIR_MIN_REC + 1, ino_readdir_one, &x);
	if (r < 0)
		return r;
	rs->eof = r == 0;
	if (r > 0 && rs->count == 0)
		return -EINVAL; /* the buffer cannot hold one entry */
	rs->length = x.used;
	return 0;
}

static int ino_h_read(ino_session *ss, const ino_creds *c, const cm_fs_req *rq,
		      cm_fs_resp *rs, uint8_t *data)
{
	uint32_t len = rq->length < CM_SEG_DATA ? rq->length : CM_SEG_DATA;
	ino_inode in;
	ssize_t n;
	int r = ino_get(ss, rq->ino, &in);

	if (r == 0 && S_ISDIR(in.mode))
		r = -EISDIR;
	else if (r == 0 && !S_ISREG(in.mode))
		r = -EINVAL;
	if (r == 0)
		r = ino_perm(&in, c, 4);
	if (r < 0)
		return r;
	n = ino_file_read(ss->svc->fs, &in, data, len, rq->offset);
	if (n < 0)
		return (int)n;
	rs->length = (uint32_t)n;
	rs->eof = rq->offset + (uint64_t)n >= in.size;
	ino_attr_fill(ss->svc, &in, &rs->attr);
	return 0;
}

static int ino_h_readlink(ino_session *ss, const ino_creds *c, const cm_fs_req *rq,
			  cm_fs_resp *rs, uint8_t *data)
{
	ino_inode in;
	ssize_t n;
	int r = ino_get(ss, rq->ino, &in);

	if (r < 0)
		return r;
	n = ino_readlink(ss->svc->fs, &in, (char *)data, CM_SEG_DATA);
	if (n < 0)
		return (int)n;
	rs->length = (uint32_t)n;
	return 0;
}

static int ino_h_statfs(ino_session *ss, const ino_creds *c, const cm_fs_req *rq,
			cm_fs_resp *rs, uint8_t *data)
{
	struct ino_statfs st;
	uint64_t bfree, ffree;
	int r = ino_statfs(ss->svc->fs, &st);

	if (r < 0)
		return r;
	/* The free counts: alloc-svc's fuzzy counters, as ext3_statfs reads
	 * its percpu counters (the descriptors' sums before it runs). */
	if (ino_txn_free_counts(ss->svc, &bfree, &ffree) == 0) {
		st.bfree = bfree;
		st.bavail = bfree > st.reserved ? bfree - st.reserved : 0;
		st.ffree = ffree;
	}
	/* As ext3_statfs reports it (bsddf): metadata is not counted. */
	rs->statfs = (cm_fs_statfs){
		.blocks = st.blocks - st.overhead, .bfree = st.bfree, .bavail = st.bavail,
		.files = st.files, .ffree = st.ffree, .bsize = st.bsize, .namemax = st.namemax,
	};
	return 0;
}

static int ino_h_access(ino_session *ss, const ino_creds *c, const cm_fs_req *rq,
			cm_fs_resp *rs, uint8_t *data)
{
	ino_inode in;
	int r = ino_get(ss, rq->ino, &in);

	if (r == 0 && (rq->flags & ~7u))
		r = -EINVAL;
	if (r == 0)
		r = ino_perm(&in, c, (int)rq->flags);
	if (r == 0)
		ino_attr_fill(ss->svc, &in, &rs->attr);
	return r;
}

static int ino_h_forget(ino_session *ss, const ino_creds *c, const cm_fs_req *rq,
			cm_fs_resp *rs, uint8_t *data)
{
	return ino_grant_forget(ss, rq->ino, rq->offset);
}

/* by_ino: rq->ino names an inode the session must have been granted. An op
 * that names a second inode checks it with ino_grant_check too. The write
 * handlers take their own inode locks (ops.h). */
static const struct {
	ino_handler *handle;
	const char *name;
	bool by_ino;
	bool shared;    /* reads rq->ino: under its lock, shared */
} ino_handlers[] = {
	[CM_FS_LOOKUP] = {ino_h_lookup, "lookup", true, true},
	[CM_FS_GETATTR] = {ino_h_getattr, "getattr", true, true},
	[CM_FS_READDIR] = {ino_h_readdir, "readdir", true, true},
	[CM_FS_READ] = {ino_h_read, "read", true, true},
	[CM_FS_READLINK] = {ino_h_readlink, "readlink", true, true},
	[CM_FS_STATFS] = {ino_h_statfs, "statfs", false, false},
	[CM_FS_ACCESS] = {ino_h_access, "access", true, true},
	[CM_FS_FORGET] = {ino_h_forget, "forget", false, false},
	[CM_FS_MKNOD] = {ino_h_mknod, "mknod", true, false},
	[CM_FS_SYMLINK] = {ino_h_symlink, "symlink", true, false},
	[CM_FS_LINK] = {ino_h_link, "link", true, false},
	[CM_FS_UNLINK] = {ino_h_unlink, "unlink", true, false},
	[CM_FS_RMDIR] = {ino_h_rmdir, "rmdir", true, false},
	[CM_FS_RENAME] = {ino_h_rename, "rename", true, false},
	[CM_FS_WRITE] = {ino_h_write, "write", true, false},
	[CM_FS_SETATTR] = {ino_h_setattr, "setattr", true, false},
	[CM_FS_FSYNC] = {ino_h_fsync, "fsync", true, false},
	[CM_FS_SYNC] = {ino_h_sync, "sync", false, false},
	[CM_FS_FALLOCATE] = {ino_h_fallocate, "fallocate", true, false},
	[CM_FS_GETXATTR] = {ino_h_getxattr, "getxattr", true, true},
	[CM_FS_SETXATTR] = {ino_h_setxattr, "setxattr", true, false},
	[CM_FS_LISTXATTR] = {ino_h_listxattr, "listxattr", true, true},
	[CM_FS_REMOVEXATTR] = {ino_h_removexattr, "removexattr", true, false},
	[CM_FS_LSEEK] = {ino_h_lseek, "lseek", true, true},
	[CM_FS_SETFLAGS] = {ino_h_setflags, "setflags", true, false},
	[CM_FS_FIEMAP] = {ino_h_fiemap, "fiemap", true, true},
};

/* The caller's credentials: the peer's, or those it passes if privileged. */
static void ino_creds_of(ino_session *ss, const cm_fs_req *rq, ino_creds *c)
{
	*c = ss->peer;
	if (!ss->privileged || !rq->use_creds)
		return;
	c->uid = rq->creds.uid;
	c->gid = rq->creds.gid;
	c->ngroups = rq->creds.ngroups < CM_FS_MAX_GROUPS ? rq->creds.ngroups : CM_FS_MAX_GROUPS;
	memcpy(c->groups, rq->creds.groups, sizeof(c->groups));
	c->checked = (rq->creds_flags & CM_FS_CREDS_CHECKED) != 0;
}

/* A node id (ext3d.h's ext3d_node) carries the inode's i_generation above
 * its number: the inode must still be that one. Otherwise the caller names
 * an inode that was freed and allocated again since it learnt the number,
 * as after a group restart that rolled back the inode's creation while
 * ext3d-fuse's kernel kept the name: -ESTALE, as NFS answers a handle of
 * a reused inode. *ino is left the bare number. */
static int ino_node_check(ino_svc *s, uint64_t *ino)
{
	uint32_t gen = (uint32_t)(*ino >> 32);
	ino_inode in;
	int r;

	if (!gen)
		return 0;
	*ino &= UINT32_MAX;
	r = ino_inode_read_any(s->fs, (uint32_t)*ino, &in);
	if (r < 0)
		return r;
	return in.mode && in.generation == gen ? 0 : -ESTALE;
}

void ino_dispatch(ino_session *ss, const cm_fs_req *rq, cm_fs_resp *rs, uint8_t *data)
{
	cm_fs_req local = *rq;
	ino_creds c;

	local.name[CM_FS_NAME_MAX] = '\0';
	if (local.hdr.version != CM_FS_VERSION) {
		rs->hdr.status = -EPROTO;
		return;
	}
	if (local.hdr.op >= sizeof(ino_handlers) / sizeof(ino_handlers[0]) ||
	    !ino_handlers[local.hdr.op].handle) {
		rs->hdr.status = -EPROTONOSUPPORT;
		return;
	}
	if (ino_handlers[local.hdr.op].by_ino) {
		int r = ino_node_check(ss->svc, &local.ino);
		if (r == 0)
			r = ino_node_check(ss->svc, &local.ino2);
		if (r == 0)
			r = ino_grant_check(ss, local.ino);
		if (r < 0) {
			rs->hdr.status = r;
			return;
		}
	}
	ino_creds_of(ss, &local, &c);
	/* Readers of an inode see no write half done: its lock, shared. */
	if (ino_handlers[local.hdr.op].shared && local.ino && local.ino <= UINT32_MAX) {
		ino_ilock_shared((uint32_t)local.ino);
		rs->hdr.status = ino_handlers[local.hdr.op].handle(ss, &c, &local, rs, data);
		ino_iunlock_shared((uint32_t)local.ino);
		return;
	}
	(void)ino_fs_take_corrupt();
	rs->hdr.status = ino_handlers[local.hdr.op].handle(ss, &c, &local, rs, data);
	/* The others may change the filesystem: corruption they met, failing
	 * or cut around, is an error of the filesystem (fserror.c). */
	if (ino_fs_take_corrupt() || rs->hdr.status == -EUCLEAN)
		ino_fserror(ss->svc, ino_handlers[local.hdr.op].name, local.ino);
}
