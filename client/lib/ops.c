/* ops.c - libext3d's read calls by inode number: one request each (reads
 * of more than a lane's buffer are split). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "rundir.h"

void x3_attr_from(const cm_fs_attr *a, ext3d_attr *ret)
{
	*ret = (ext3d_attr){
		.ino = a->ino, .mode = a->mode, .nlink = a->nlink, .uid = a->uid, .gid = a->gid,
		.size = a->size, .blocks = a->blocks, .rdev = a->rdev, .blksize = a->blksize,
		.atime = a->atime, .mtime = a->mtime, .ctime = a->ctime,
		.atime_ns = a->atime_ns, .mtime_ns = a->mtime_ns, .ctime_ns = a->ctime_ns,
		.flags = a->iflags, .generation = a->generation,
	};
}

int ext3d_attach(const char *instance, ext3d **ret)
{
	ext3d *fs = calloc(1, sizeof(*fs));
	int r;

	if (!fs)
		return -ENOMEM;
	fs->sock = -1;
	pthread_mutex_init(&fs->mtx, NULL);
	pthread_mutex_init(&fs->dirty_mtx, NULL);
	pthread_cond_init(&fs->lane_free, NULL);
	/* inode-svc takes the peer's credentials at connect: root then
	 * passes every permission check, as CAP_DAC_OVERRIDE does. */
	fs->uid = (uint32_t)geteuid();
	fs->root = fs->uid == 0;
	r = cm_instance_name(instance, fs->instance, sizeof(fs->instance));
	if (r == 0)
		r = x3_session_attach(fs);
	if (r < 0) {
		ext3d_detach(fs);
		return r;
	}
	*ret = fs;
	return 0;
}

ext3d *ext3d_detach(ext3d *fs)
{
	if (!fs)
		return NULL;
	x3_session_close(fs);
	x3_dirty_fini(fs);
	pthread_cond_destroy(&fs->lane_free);
	pthread_mutex_destroy(&fs->dirty_mtx);
	pthread_mutex_destroy(&fs->mtx);
	free(fs);
	return NULL;
}

static int x3_simple(ext3d *fs, cm_fs_req *req, ext3d_attr *ret)
{
	cm_fs_resp resp;
	int r = x3_call(fs, req, &resp, NULL, 0);

	if (r == 0 && ret)
		x3_attr_from(&resp.attr, ret);
	return r;
}

int ext3d_lookup(ext3d *fs, uint64_t dir, const char *name, ext3d_attr *ret)
{
	cm_fs_req req = {.hdr.op = CM_FS_LOOKUP, .ino = dir};
	size_t n = strlen(name);

	if (n > EXT3D_NAME_MAX)
		return -ENAMETOOLONG;
	req.namelen = (uint32_t)n;
	memcpy(req.name, name, n);
	return x3_simple(fs, &req, ret);
}

int ext3d_getattr(ext3d *fs, uint64_t ino, ext3d_attr *ret)
{
	cm_fs_req req = {.hdr.op = CM_FS_GETATTR, .ino = ino};

	return x3_simple(fs, &req, ret);
}

int ext3d_forget(ext3d *fs, uint64_t ino, uint64_t nlookup)
{
	cm_fs_req req = {.hdr.op = CM_FS_FORGET, .ino = ino, .offset = nlookup};
	bool grants = __atomic_load_n(&fs->grants, __ATOMIC_RELAXED);

	if (!grants || nlookup == 0)
		return 0; /* a root session holds no grants: nothing to give back */
	/* Grants belong to a session: a dead one took them with it. Attaching
	 * anew only to give back what the new session never had would cost
	 * a cleanup after a timed-out call a second deadline. */
	if (__atomic_load_n(&fs->dead, __ATOMIC_RELAXED))
		return 0;
	return x3_simple(fs, &req, NULL);
}

int ext3d_access_ino(ext3d *fs, uint64_t ino, int mask)
{
	cm_fs_req req = {.hdr.op = CM_FS_ACCESS, .ino = ino, .flags = (uint32_t)mask};

	return x3_simple(fs, &req, NULL);
}

int64_t ext3d_lseek_ino(ext3d *fs, uint64_t ino, uint64_t off, int whence)
{
	cm_fs_req req = {.hdr.op = CM_FS_LSEEK, .ino = ino, .offset = off,
			 .flags = (uint32_t)whence};
	cm_fs_resp resp;
	int r = x3_call(fs, &req, &resp, NULL, 0);

	return r < 0 ? r : (int64_t)resp.next;
}

int ext3d_fiemap_ino(ext3d *fs, uint64_t ino, uint64_t start, uint64_t len, unsigned flags,
		     ext3d_extent *ext, unsigned max)
{
	cm_fs_req req = {.hdr.op = CM_FS_FIEMAP, .ino = ino, .offset = start, .range = len,
			 .flags = flags};
	cm_fs_extent *buf = NULL;
	cm_fs_resp resp;
	int r;

	_Static_assert(EXT3D_FIEMAP_MAX * sizeof(cm_fs_extent) <= CM_SEG_DATA,
		       "a call's extents fit the lane's buffer");
	if (max > EXT3D_FIEMAP_MAX)
		max = EXT3D_FIEMAP_MAX;
	req.length = max * (uint32_t)sizeof(cm_fs_extent);
	if (max && !(buf = malloc(req.length)))
		return -ENOMEM;
	r = x3_call(fs, &req, &resp, buf, req.length);
	for (uint32_t i = 0; r == 0 && max && i < resp.count && i < max; i++)
		ext[i] = (ext3d_extent){.logical = buf[i].logical, .physical = buf[i].physical,
					.length = buf[i].length, .flags = buf[i].flags};
	free(buf);
	return r < 0 ? r : (int)resp.count;
}

#define X3_READDIR_BUF (64 * 1024)

/* Unpacks the entries inode-svc put in buf (it is trusted, but bounds are
 * checked all the same). */
static int x3_unpack_dirents(const uint8_t *buf, uint32_t len, uint32_t count,
			     ext3d_dirent *ents, size_t max, uint64_t *cookie)
{
	uint32_t off = 0;
	size_t n = 0;

	while (n < count && n < max && off + sizeof(cm_fs_dirent) <= len) {
		cm_fs_dirent de;
		memcpy(&de, buf + off, sizeof(de));
		if (de.reclen < sizeof(de) + sizeof(cm_fs_attr) || off + de.reclen > len)
			return -EPROTO;
		ents[n].ino = de.ino;
		ents[n].type = de.type;
		memcpy(ents[n].name, buf + off + sizeof(de), de.namelen);
		ents[n].name[de.namelen] = '\0';
		cm_fs_attr a;
		memcpy(&a, buf + off + de.reclen - sizeof(a), sizeof(a));
		x3_attr_from(&a, &ents[n].attr);
		ents[n].next = de.next;
		*cookie = de.next; /* the server may have packed more than max */
		off += de.reclen;
		n++;
	}
	return (int)n;
}

/* ext3 file types to <dirent.h> DT_* values. */
static const uint8_t x3_dtype[8] = {0, 8, 4, 2, 6, 1, 12, 10};

int x3_readdir(ext3d *fs, uint64_t dir, uint64_t *cookie, ext3d_dirent *ents, size_t max,
	       uint32_t flags)
{
	size_t room = sizeof(cm_fs_dirent) + 264 + sizeof(cm_fs_attr);
	cm_fs_req req = {.hdr.op = CM_FS_READDIR, .ino = dir, .offset = *cookie,
			 .flags = flags | CM_FS_READDIR_PLUS};
	cm_fs_resp resp;
	uint8_t *buf;
	int r;

	if (max == 0)
		return -EINVAL;
	req.length = (uint32_t)(max * room < X3_READDIR_BUF ? max * room : X3_READDIR_BUF);
	buf = malloc(req.length);
	if (!buf)
		return -ENOMEM;
	r = x3_call(fs, &req, &resp, buf, req.length);
	if (r == 0)
		r = x3_unpack_dirents(buf, resp.length, resp.count, ents, max, cookie);
	free(buf);
	for (int i = 0; i < r; i++)
		ents[i].type = x3_dtype[ents[i].type & 7];
	return r;
}

int ext3d_readdir_ino(ext3d *fs, uint64_t dir, uint64_t *cookie, ext3d_dirent *ents, size_t max)
{
	return x3_readdir(fs, dir, cookie, ents, max, CM_FS_READDIR_GRANT);
}

ssize_t ext3d_read_ino(ext3d *fs, uint64_t ino, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		size_t chunk = len - done < CM_SEG_DATA ? len - done : CM_SEG_DATA;
		cm_fs_req req = {.hdr.op = CM_FS_READ, .ino = ino, .offset = off + done,
				 .length = (uint32_t)chunk};
		cm_fs_resp resp;
		int r = x3_call(fs, &req, &resp, (uint8_t *)buf + done, chunk);
		if (r < 0)
			return done ? (ssize_t)done : r;
		done += resp.length;
		if (resp.length < chunk || resp.eof)
			break;
	}
	return (ssize_t)done;
}

ssize_t ext3d_readlink_ino(ext3d *fs, uint64_t ino, char *buf, size_t len)
{
	cm_fs_req req = {.hdr.op = CM_FS_READLINK, .ino = ino};
	cm_fs_resp resp;
	int r = x3_call(fs, &req, &resp, buf, len);

	return r < 0 ? r : (ssize_t)resp.length;
}

int ext3d_statfs(ext3d *fs, ext3d_fsstat *ret)
{
	cm_fs_req req = {.hdr.op = CM_FS_STATFS};
	cm_fs_resp resp;
	int r = x3_call(fs, &req, &resp, NULL, 0);

	if (r == 0)
		*ret = (ext3d_fsstat){
			.blocks = resp.statfs.blocks, .bfree = resp.statfs.bfree,
			.bavail = resp.statfs.bavail, .files = resp.statfs.files,
			.ffree = resp.statfs.ffree, .bsize = resp.statfs.bsize,
			.namemax = resp.statfs.namemax,
		};
	return r;
}
