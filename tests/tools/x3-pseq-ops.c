/* x3-pseq-ops.c - runs one x3-posixseq call as the current process and
 * prints it: the call and its arguments, the return value and errno name,
 * and for the calls that change an inode the stat fields ext3 defines
 * afterwards (set-id bits cleared by a write or chown show there). Long
 * names print as their first bytes and length. Buffers are static: the
 * tool is single-threaded and children get their own copy.
 * Two things no FUSE server can match are left out: the atime (printed
 * only right after utimensat set it: FUSE marks its inodes S_NOATIME and
 * reads served from the page cache never reach the server) and writes
 * into FIFOs (FUSE marks special files S_NOCMTIME, so the pipe's mtime
 * and ctime updates never happen).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "x3-pseq.h"

#define PS_IO_MAX 200001
/* where a write may pass ext3's largest file (16 GiB and more with 1 KiB blocks) */
#define PS_FAR_OFF ((1LL << 34) - 5000)
#define PS_ACL_USER_OBJ 0x01
#define PS_ACL_USER 0x02
#define PS_ACL_GROUP_OBJ 0x04
#define PS_ACL_GROUP 0x08
#define PS_ACL_MASK 0x10
#define PS_ACL_OTHER 0x20

static unsigned char ps_io[PS_IO_MAX];

void ps_printf(ps_out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->len >= sizeof(o->buf) - 1)
		return;
	va_start(ap, fmt);
	n = vsnprintf(o->buf + o->len, sizeof(o->buf) - o->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		o->len += (size_t)n < sizeof(o->buf) - o->len ? (size_t)n : sizeof(o->buf) - 1 - o->len;
}

void ps_ret(ps_out *o, long r, int err)
{
	if (r < 0) {
		const char *name = strerrorname_np(err);

		ps_printf(o, " = -1 %s", name ? name : "E?");
	} else {
		ps_printf(o, " = %ld", r);
	}
}

static void ps_time(ps_out *o, const char *tag, const struct timespec *t)
{
	/* explicit times set by utimensat are in 2001-2004; now is later */
	if (t->tv_sec < 1100000000)
		ps_printf(o, " %s=%lld.%09ld", tag, (long long)t->tv_sec, t->tv_nsec);
	else
		ps_printf(o, " %s=now", tag);
}

static void ps_stat_fields(ps_out *o, const struct stat *st, int atime)
{
	ps_printf(o, " mode=0%o nlink=%lu uid=%u gid=%u size=%lld blocks=%lld rdev=%u:%u",
		  st->st_mode, (unsigned long)st->st_nlink, st->st_uid, st->st_gid,
		  (long long)st->st_size, (long long)st->st_blocks, major(st->st_rdev), minor(st->st_rdev));
	if (atime)
		ps_time(o, "a", &st->st_atim);
	ps_time(o, "m", &st->st_mtim);
}

/* A path for printing: long ones as their first bytes and length. */
static const char *ps_p(const char *p)
{
	static char buf[2][64];
	static int k;
	size_t n = strlen(p);

	if (n <= 40)
		return p;
	k ^= 1;
	snprintf(buf[k], sizeof(buf[k]), "%.12s...[%zu]", p, n);
	return buf[k];
}

static void ps_lstat_print(ps_out *o, const char *p)
{
	struct stat st;

	if (lstat(p, &st) < 0)
		ps_printf(o, "; lstat %s = -1 %s", ps_p(p), strerrorname_np(errno));
	else {
		ps_printf(o, "; %s", ps_p(p));
		ps_stat_fields(o, &st, 0);
	}
}

static void ps_fstat_print(ps_out *o, int fd)
{
	struct stat st;

	if (fstat(fd, &st) == 0) {
		ps_printf(o, ";");
		ps_stat_fields(o, &st, 0);
	}
}

/* open(2) that never opens a device node: the seeded rdevs are harmless
 * (major 0), but a FUSE mount is nodev, so neither side opens one. */
static int ps_open(ps_out *o, const char *p, int flags, unsigned mode)
{
	struct stat st;

	if (stat(p, &st) == 0 && (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode))) {
		ps_printf(o, " (device, not opened)");
		errno = ENXIO;
		return -1;
	}
	return open(p, flags | O_NONBLOCK, mode);
}

static void ex_open_write(const ps_op *op, ps_out *o)
{
	bool far = op->kind == PS_WRITE && !(op->flags & O_APPEND) && op->a >= PS_FAR_OFF;
	struct stat st;
	ssize_t n;
	int fd;

	ps_printf(o, "open %s 0x%x 0%o", ps_p(op->p0), (unsigned)op->flags, op->mode);
	fd = ps_open(o, op->p0, op->flags, op->mode);
	ps_ret(o, fd < 0 ? -1 : 0, errno);
	if (fd < 0)
		return;
	/* Data written to a FIFO goes through the kernel's pipe code, which
	 * moves the FIFO's mtime and ctime (pipe_write -> file_update_time)
	 * on its own inode; through FUSE that update never reaches the file
	 * system (the FUSE module forwards no time change of a special
	 * file), so ext3d-fuse cannot show it (docs/fuse.md). Not an ext3d
	 * answer: FIFOs are opened here but never written. */
	/* A write too far out for ext3 (EFBIG past 16 GiB with 1 KiB blocks,
	 * 2 TiB with 4 KiB) by a caller without CAP_FSETID clears the set-id
	 * bits on the kernel's ext3 only once the size check passes. Through
	 * FUSE the module clears them first (its own size limit is far larger),
	 * and libfuse 3.14 cannot hand that job to the daemon in a form that
	 * tells a write's kill from chown(f, -1, -1) (docs/fuse.md). Not an
	 * ext3d answer: such writes to set-id files are not made. */
	if (fstat(fd, &st) < 0)
		st.st_mode = 0;
	if (S_ISFIFO(st.st_mode) && (op->kind == PS_WRITE || op->b)) {
		ps_printf(o, "; (FIFO, not written)");
	} else if (far && S_ISREG(st.st_mode) && (st.st_mode & (S_ISUID | S_ISGID))) {
		ps_printf(o, "; (pwrite far out to a set-id file, not made)");
	} else if (op->kind == PS_WRITE || op->b) {
		ps_fill(ps_io, (size_t)op->b, op->dseed);
		if (op->kind == PS_CREATE || (op->flags & O_APPEND)) {
			ps_printf(o, "; write %lld", (long long)op->b);
			n = write(fd, ps_io, (size_t)op->b);
		} else {
			ps_printf(o, "; pwrite %lld@%lld", (long long)op->b, (long long)op->a);
			n = pwrite(fd, ps_io, (size_t)op->b, (off_t)op->a);
		}
		ps_ret(o, (long)n, errno);
	}
	ps_fstat_print(o, fd);
	close(fd);
}

static void ex_read(const ps_op *op, ps_out *o)
{
	struct stat st;
	ssize_t n;
	int fd;

	ps_printf(o, "open %s O_RDONLY", ps_p(op->p0));
	fd = ps_open(o, op->p0, O_RDONLY, 0);
	ps_ret(o, fd < 0 ? -1 : 0, errno);
	if (fd < 0)
		return;
	/* A read at or past the end of the file moves atime on the kernel's
	 * ext3 (filemap_read's file_accessed, relatime), but through FUSE it
	 * never reaches the file system: the FUSE module answers 0 from the
	 * size it knows (docs/fuse.md). Not an ext3d answer: such reads are
	 * not made. */
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && op->a >= st.st_size) {
		ps_printf(o, "; (pread at or past the end, not made)");
		close(fd);
		return;
	}
	ps_printf(o, "; pread %lld@%lld", (long long)op->b, (long long)op->a);
	n = pread(fd, ps_io, (size_t)op->b, (off_t)op->a);
	ps_ret(o, (long)n, errno);
	if (n > 0)
		ps_printf(o, " hash=%016llx", (unsigned long long)ps_hash(0, ps_io, (size_t)n));
	close(fd);
}

static void ex_trunc(const ps_op *op, ps_out *o)
{
	int fd, r;

	if (op->kind == PS_TRUNC) {
		ps_printf(o, "truncate %s %lld", ps_p(op->p0), (long long)op->a);
		r = truncate(op->p0, (off_t)op->a);
		ps_ret(o, r, errno);
		if (r == 0)
			ps_lstat_print(o, op->p0);
		return;
	}
	ps_printf(o, "open %s 0x%x", ps_p(op->p0), (unsigned)op->flags);
	fd = ps_open(o, op->p0, op->flags, 0);
	ps_ret(o, fd < 0 ? -1 : 0, errno);
	if (fd < 0)
		return;
	ps_printf(o, "; ftruncate %lld", (long long)op->a);
	r = ftruncate(fd, (off_t)op->a);
	ps_ret(o, r, errno);
	ps_fstat_print(o, fd);
	close(fd);
}

static void ex_names(const ps_op *op, ps_out *o)
{
	static char target[4100];
	const char *t = op->p1;
	int r = -1;

	switch (op->kind) {
	case PS_RENAME:
		ps_printf(o, "renameat2 %s %s %d", ps_p(op->p0), ps_p(op->p1), op->flags);
		r = renameat2(AT_FDCWD, op->p0, AT_FDCWD, op->p1, (unsigned)op->flags);
		break;
	case PS_LINK:
		ps_printf(o, "link %s %s", ps_p(op->p0), ps_p(op->p1));
		r = link(op->p0, op->p1);
		break;
	case PS_SYMLINK:
		if (op->a) {
			memset(target, 't', (size_t)op->a);
			target[op->a] = 0;
			t = target;
		}
		ps_printf(o, "symlink %s %s", ps_p(t), ps_p(op->p0));
		r = symlink(t, op->p0);
		break;
	case PS_UNLINK:
		ps_printf(o, "unlink %s", ps_p(op->p0));
		r = unlink(op->p0);
		break;
	case PS_RMDIR:
		ps_printf(o, "rmdir %s", ps_p(op->p0));
		r = rmdir(op->p0);
		break;
	case PS_MKDIR:
		ps_printf(o, "mkdir %s 0%o", ps_p(op->p0), op->mode);
		r = mkdir(op->p0, op->mode);
		break;
	case PS_MKNOD:
		ps_printf(o, "mknod %s 0%o %u:%u", ps_p(op->p0), op->mode, major((dev_t)op->a),
			  minor((dev_t)op->a));
		r = mknod(op->p0, op->mode, (dev_t)op->a);
		break;
	}
	ps_ret(o, r, errno);
	if (r < 0)
		return;
	if (op->kind == PS_RENAME || op->kind == PS_LINK)
		ps_lstat_print(o, op->p1);
	if (op->kind != PS_RENAME && op->kind != PS_UNLINK && op->kind != PS_RMDIR)
		ps_lstat_print(o, op->p0);
	else if (op->kind == PS_RENAME && op->flags == RENAME_EXCHANGE)
		ps_lstat_print(o, op->p0);
}

/* Whether the caller is in group gid, as its effective or a
 * supplementary group. */
static bool ps_in_group(gid_t gid)
{
	gid_t groups[64];
	int n = getgroups(64, groups);

	if (gid == getegid())
		return true;
	for (int i = 0; i < n; i++)
		if (groups[i] == gid)
			return true;
	return false;
}

static void ex_attrs(const ps_op *op, ps_out *o)
{
	struct timespec ts[2];
	struct stat st;
	int r = -1;

	switch (op->kind) {
	case PS_CHMOD:
		ps_printf(o, "chmod %s 0%o", ps_p(op->p0), op->mode);
		r = chmod(op->p0, op->mode);
		break;
	case PS_CHOWN:
		ps_printf(o, "fchownat %s %lld %lld 0x%x", ps_p(op->p0), (long long)op->a, (long long)op->b,
			  (unsigned)op->flags);
		/* chown(f, -1, -1) by a caller who neither owns a set-group-ID
		 * non-directory whose group may not execute nor is in its
		 * group: the kernel's ext3 says
		 * EPERM (the kill of the bit it asks for is a mode change).
		 * Through FUSE that kill reaches ext3d-fuse as the same
		 * field-less SETATTR a write by that caller sends, which must
		 * succeed, so it succeeds (docs/fuse.md). Not an ext3d answer:
		 * such calls are not made. */
		if (op->a == -1 && op->b == -1 && geteuid() != 0 && fstatat(AT_FDCWD, op->p0, &st, op->flags) == 0 &&
		    !S_ISDIR(st.st_mode) && st.st_uid != geteuid() &&
		    (st.st_mode & (S_ISGID | S_IXGRP)) == S_ISGID && !ps_in_group(st.st_gid)) {
			ps_printf(o, "; (by a non-owner of a set-id file, not made)");
			return;
		}
		r = fchownat(AT_FDCWD, op->p0, (uid_t)op->a, (gid_t)op->b, op->flags);
		break;
	case PS_UTIMES:
		for (int i = 0; i < 2; i++) {
			ts[i].tv_sec = op->t[i] < 0 ? 0 : op->t[i] / 1000000000;
			ts[i].tv_nsec = op->t[i] == -1 ? UTIME_NOW : op->t[i] == -2 ? UTIME_OMIT : op->t[i] % 1000000000;
		}
		ps_printf(o, "utimensat %s %lld %lld 0x%x", ps_p(op->p0), op->a ? -1LL : (long long)op->t[0],
			  op->a ? -1LL : (long long)op->t[1], (unsigned)op->flags);
		r = utimensat(AT_FDCWD, op->p0, op->a ? NULL : ts, op->flags);
		break;
	}
	ps_ret(o, r, errno);
	if (r == 0 && op->kind == PS_UTIMES && fstatat(AT_FDCWD, op->p0, &st, op->flags) == 0) {
		/* the atime only when this call set it */
		ps_printf(o, "; %s", ps_p(op->p0));
		ps_stat_fields(o, &st, op->a || op->t[0] != -2);
	} else if (r == 0) {
		ps_lstat_print(o, op->p0);
	}
}

static int ps_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void ex_look(const ps_op *op, ps_out *o)
{
	static char *names[1024];
	struct stat st;
	struct dirent *de;
	int n = 0, r;
	DIR *d;

	switch (op->kind) {
	case PS_STAT:
		ps_printf(o, "lstat %s", ps_p(op->p0));
		r = lstat(op->p0, &st);
		ps_ret(o, r, errno);
		if (r == 0)
			ps_stat_fields(o, &st, 0);
		ps_printf(o, "; stat");
		r = stat(op->p0, &st);
		ps_ret(o, r, errno);
		if (r == 0)
			ps_stat_fields(o, &st, 0);
		return;
	case PS_READLINK:
		ps_printf(o, "readlink %s", ps_p(op->p0));
		r = (int)readlink(op->p0, (char *)ps_io, 8192);
		ps_ret(o, r, errno);
		if (r > 0)
			ps_printf(o, " hash=%016llx", (unsigned long long)ps_hash(0, ps_io, (size_t)r));
		return;
	case PS_ACCESS:
		ps_printf(o, "faccessat %s %u 0x%x", ps_p(op->p0), op->mode, (unsigned)op->flags);
		r = faccessat(AT_FDCWD, op->p0, (int)op->mode, op->flags);
		ps_ret(o, r, errno);
		return;
	case PS_FSYNC:
		ps_printf(o, "open %s O_RDONLY", ps_p(op->p0));
		r = ps_open(o, op->p0, O_RDONLY, 0);
		ps_ret(o, r < 0 ? -1 : 0, errno);
		if (r >= 0) {
			int fd = r;

			ps_printf(o, "; fsync");
			r = fsync(fd);
			ps_ret(o, r, errno);
			ps_printf(o, "; fdatasync");
			r = fdatasync(fd);
			ps_ret(o, r, errno);
			close(fd);
		}
		return;
	}
	ps_printf(o, "opendir %s", ps_p(op->p0));
	d = opendir(op->p0);
	ps_ret(o, d ? 0 : -1, errno);
	if (!d)
		return;
	while ((de = readdir(d)) && n < 1024)
		names[n++] = strdup(de->d_name);
	closedir(d);
	qsort(names, (size_t)n, sizeof(names[0]), ps_cmp);
	ps_printf(o, "; %d:", n);
	for (int i = 0; i < n; i++) {
		ps_printf(o, " %s", ps_p(names[i]));
		free(names[i]);
	}
}

/* A POSIX ACL in the VFS xattr format (version 2), from the bits of a:
 * permissions, which named entries exist, and now and then a broken one. */
static size_t ps_acl(unsigned char *buf, uint64_t a)
{
	struct { uint16_t tag, perm; uint32_t id; } e[8];
	int n = 0, named = 0, broken = (int)(a >> 24 & 15);
	uint32_t version = broken == 1 ? 1 : 2;

	e[n++] = (typeof(e[0])){ PS_ACL_USER_OBJ, a & 7, ~0u };
	if (a >> 20 & 1)
		e[n++] = (typeof(e[0])){ PS_ACL_USER, a >> 3 & 7, 1000 }, named = 1;
	if (a >> 21 & 1)
		e[n++] = (typeof(e[0])){ PS_ACL_USER, a >> 18 & 7, 1001 }, named = 1;
	e[n++] = (typeof(e[0])){ PS_ACL_GROUP_OBJ, a >> 6 & 7, ~0u };
	if (a >> 22 & 1)
		e[n++] = (typeof(e[0])){ PS_ACL_GROUP, a >> 9 & 7, 100 }, named = 1;
	if ((named && broken != 2) || (a >> 23 & 1))
		e[n++] = (typeof(e[0])){ PS_ACL_MASK, a >> 12 & 7, ~0u };
	e[n++] = (typeof(e[0])){ PS_ACL_OTHER, a >> 15 & 7, ~0u };
	memcpy(buf, &version, 4);
	memcpy(buf + 4, e, sizeof(e[0]) * (size_t)n);
	return 4 + sizeof(e[0]) * (size_t)n;
}

static void ps_xattr_names(ps_out *o, char *list, ssize_t len)
{
	char *names[256];
	int n = 0;

	for (ssize_t off = 0; off < len && n < 256; off += (ssize_t)strlen(list + off) + 1)
		names[n++] = list + off;
	qsort(names, (size_t)n, sizeof(names[0]), ps_cmp);
	for (int i = 0; i < n; i++)
		ps_printf(o, " %s", ps_p(names[i]));
}

static void ex_xattr(const ps_op *op, ps_out *o)
{
	const char *acl = op->flags ? "system.posix_acl_default" : "system.posix_acl_access";
	ssize_t r;
	size_t n;

	switch (op->kind) {
	case PS_SETXATTR:
		ps_fill(ps_io, (size_t)op->b, op->dseed);
		ps_printf(o, "lsetxattr %s %s %lld %d", ps_p(op->p0), ps_p(op->p1), (long long)op->b, op->flags);
		r = lsetxattr(op->p0, op->p1, ps_io, (size_t)op->b, op->flags);
		break;
	case PS_GETXATTR:
		ps_printf(o, "lgetxattr %s %s %lld", ps_p(op->p0), ps_p(op->p1), (long long)op->b);
		r = lgetxattr(op->p0, op->p1, ps_io, (size_t)op->b);
		ps_ret(o, (long)r, errno);
		if (r > 0 && op->b)
			ps_printf(o, " hash=%016llx", (unsigned long long)ps_hash(0, ps_io, (size_t)r));
		return;
	case PS_LISTXATTR:
		ps_printf(o, "llistxattr %s %lld", ps_p(op->p0), (long long)op->b);
		r = llistxattr(op->p0, (char *)ps_io, (size_t)op->b);
		ps_ret(o, (long)r, errno);
		if (r > 0 && op->b)
			ps_xattr_names(o, (char *)ps_io, r);
		return;
	case PS_REMOVEXATTR:
		ps_printf(o, "lremovexattr %s %s", ps_p(op->p0), ps_p(op->p1));
		r = lremovexattr(op->p0, op->p1);
		break;
	case PS_SETACL:
		n = ps_acl(ps_io, (uint64_t)op->a);
		ps_printf(o, "setxattr %s %s", ps_p(op->p0), acl);
		r = setxattr(op->p0, acl, ps_io, n, 0);
		for (size_t i = 4; i < n; i += 8)
			ps_printf(o, "%s%x:%o:%d", i == 4 ? " " : ",", ps_io[i], ps_io[i + 2], (int)(ps_io[i + 4] | ps_io[i + 5] << 8));
		break;
	default:
		ps_printf(o, "getxattr %s %s", ps_p(op->p0), acl);
		r = getxattr(op->p0, acl, ps_io, PS_VAL_MAX);
		ps_ret(o, (long)r, errno);
		for (ssize_t i = 0; i < r && i < 200; i++)
			ps_printf(o, "%s%02x", i ? "" : " ", ps_io[i]);
		return;
	}
	ps_ret(o, (long)r, errno);
	if (r == 0)
		ps_lstat_print(o, op->p0);
}

void ps_exec(const ps_op *op, ps_out *o)
{
	switch (op->kind) {
	case PS_CREATE:
	case PS_WRITE:
		ex_open_write(op, o);
		break;
	case PS_READ:
		ex_read(op, o);
		break;
	case PS_TRUNC:
	case PS_FTRUNC:
		ex_trunc(op, o);
		break;
	case PS_RENAME: case PS_LINK: case PS_SYMLINK: case PS_UNLINK:
	case PS_RMDIR: case PS_MKDIR: case PS_MKNOD:
		ex_names(op, o);
		break;
	case PS_CHMOD: case PS_CHOWN: case PS_UTIMES:
		ex_attrs(op, o);
		break;
	case PS_STAT: case PS_READLINK: case PS_ACCESS: case PS_FSYNC: case PS_READDIR:
		ex_look(op, o);
		break;
	default:
		ex_xattr(op, o);
		break;
	}
}
