/* difftest - the differential test of the write path (difftest.t): one
 * seeded random sequence of operations run step by step against ext3d
 * (through libext3d's path calls) and against a kernel mount of an
 * identical image (system calls under MOUNT), every return value and
 * errno compared; then both trees are walked and compared (names, types,
 * modes, owners, sizes, bytes, link counts, symlink targets).
 *
 *   difftest [--instance NAME] MOUNT SEED NOPS
 *
 * Names come from a small alphabet so that operations collide: existing
 * and missing names, files where directories are expected, non-empty
 * directories, links, renames into a directory's own subtree, symlinks
 * (relative, never climbing with "..", so that both sides resolve them
 * alike) and names too long. Runs as root; a third of the steps run as
 * uid and gid 1000 (a second session attached with those credentials,
 * and the kernel's fsuid and fsgid), so that permissions, ownership and
 * the sticky bit are compared too. The umask is 022 on both sides.
 * Prints each mismatch (at most 30) with its step; exit 0 when none, 1
 * otherwise, 2 on a setup error. With DIFFTEST_TRACE set in the
 * environment, every call and its results are printed too.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ext3d.h"

#define DT_UID 1000
#define DT_GID 1000

#define DT_MAXBUF (6u << 20)
#define DT_MAX_REPORTS 30

static ext3d *dt_fs;   /* attached as root */
static ext3d *dt_user; /* attached as DT_UID:DT_GID */
static ext3d *dt_cur;  /* the handle of the step running */
static const char *dt_mnt;
static uint64_t dt_rng;
static unsigned dt_step, dt_bad;
static bool dt_trace;
static uint8_t *dt_buf, *dt_buf2;

static uint32_t dt_rand(void)
{
	dt_rng ^= dt_rng << 13;
	dt_rng ^= dt_rng >> 7;
	dt_rng ^= dt_rng << 17;
	return (uint32_t)(dt_rng >> 11);
}

static uint32_t dt_pick(uint32_t n)
{
	return dt_rand() % n;
}

__attribute__((format(printf, 1, 2)))
static void dt_mismatch(const char *fmt, ...)
{
	va_list ap;

	if (++dt_bad > DT_MAX_REPORTS)
		return;
	printf("step %u: ", dt_step);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

/* ---- names ---- */

/* A relative path of 1 to 3 components from a small alphabet; now and
 * then ".", "..", a name too long, or a trailing '/'. */
static void dt_path(char *out, size_t cap)
{
	static const char *names[] = {"a", "b", "c", "d", "e", "f"};
	unsigned depth = 1 + dt_pick(3);
	bool named = false; /* the last component was a name: ".." may follow */
	size_t n = 0;

	for (unsigned i = 0; i < depth; i++) {
		const char *c = names[dt_pick(6)];
		char longname[300];
		uint32_t x = dt_pick(100);
		if (x == 0)
			c = ".";
		else if (x == 1 && named)
			c = "..";
		else if (x == 2) {
			memset(longname, 'L', 256);
			longname[256] = '\0';
			c = longname;
		}
		named = c[0] != '.';
		n += (size_t)snprintf(out + n, cap - n, "%s%s", i ? "/" : "", c);
	}
	if (dt_pick(40) == 0)
		snprintf(out + n, cap - n, "/");
}

/* A symlink target: downward and relative, or dangling. */
static void dt_target(char *out, size_t cap)
{
	static const char *names[] = {"a", "b", "c", "d", "e", "f", "g"};
	unsigned depth = 1 + dt_pick(2);
	size_t n = 0;

	for (unsigned i = 0; i < depth; i++)
		n += (size_t)snprintf(out + n, cap - n, "%s%s", i ? "/" : "", names[dt_pick(7)]);
}

static void dt_kpath(const char *rel, char *out, size_t cap)
{
	if ((size_t)snprintf(out, cap, "%s/%s", dt_mnt, rel) >= cap)
		out[0] = '\0';
}

static void dt_xpath(const char *rel, char *out, size_t cap)
{
	if ((size_t)snprintf(out, cap, "/%s", rel) >= cap)
		out[0] = '\0';
}

static int dt_k(int r)
{
	return r < 0 ? -errno : r;
}

static void dt_cmp(const char *what, const char *arg, int kr, int xr)
{
	if (dt_trace)
		printf("step %u: %s %s: kernel %d, ext3d %d\n", dt_step, what, arg, kr, xr);
	if (kr != xr)
		dt_mismatch("%s %s: kernel %d (%s), ext3d %d (%s)", what, arg, kr,
			    kr < 0 ? strerror(-kr) : "ok", xr, xr < 0 ? strerror(-xr) : "ok");
}

static void dt_fill(uint8_t *buf, size_t len, uint32_t salt)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)((i * 7 + salt) ^ (i >> 8) ^ (salt >> 3));
}

/* ---- operations ---- */

static const uint32_t dt_modes[] = {0644, 0600, 0755, 0444, 0700, 0777, 01777, 04755};

static void dt_op_create(const char *rel)
{
	char kp[4400], xp[4400];
	int flags = O_WRONLY | O_CREAT | (dt_pick(3) == 0 ? O_EXCL : 0) |
		    (dt_pick(3) == 0 ? O_TRUNC : 0);
	uint32_t mode = dt_modes[dt_pick(6)];
	ext3d_file *f;
	int kr, xr;

	dt_kpath(rel, kp, sizeof(kp));
	dt_xpath(rel, xp, sizeof(xp));
	kr = dt_k(open(kp, flags | O_CLOEXEC, mode));
	if (kr >= 0) {
		close(kr);
		kr = 0;
	}
	xr = ext3d_create(dt_cur, xp, flags, mode, &f);
	if (xr == 0)
		ext3d_close(f);
	dt_cmp("create", rel, kr, xr);
}

static void dt_op_mkdir(const char *rel)
{
	char kp[4400], xp[4400];
	uint32_t mode = dt_modes[dt_pick(8)] & 01777;

	dt_kpath(rel, kp, sizeof(kp));
	dt_xpath(rel, xp, sizeof(xp));
	dt_cmp("mkdir", rel, dt_k(mkdir(kp, mode)), ext3d_mkdir(dt_cur, xp, mode));
}

/* open, then write len bytes at off (or append), through both. */
static void dt_op_write(const char *rel)
{
	char kp[4400], xp[4400];
	int flags = (dt_pick(4) == 0 ? O_RDWR : O_WRONLY) | (dt_pick(4) == 0 ? O_APPEND : 0) |
		    (dt_pick(10) == 0 ? O_TRUNC : 0) | (dt_pick(10) == 0 ? O_SYNC : 0);
	size_t len = dt_pick(8) == 0 ? dt_pick(70000) : dt_pick(5000);
	uint64_t off = dt_pick(4) == 0 ? dt_pick(5u << 20) : dt_pick(40000);
	uint32_t salt = dt_rand();
	ext3d_file *f = NULL;
	int kfd, xr;

	dt_kpath(rel, kp, sizeof(kp));
	dt_xpath(rel, xp, sizeof(xp));
	dt_fill(dt_buf, len, salt);
	kfd = dt_k(open(kp, flags | O_CLOEXEC));
	xr = ext3d_open(dt_cur, xp, flags, &f);
	dt_cmp("open for write", rel, kfd < 0 ? kfd : 0, xr);
	if (kfd >= 0 && xr == 0) {
		bool seq = dt_pick(2) == 0;
		if (dt_trace)
			printf("step %u: %s %zu bytes at %s %" PRIu64 " (flags %#o)\n", dt_step,
			       seq ? "write" : "pwrite", len, seq ? "pos, not" : "offset", off,
			       (unsigned)flags);
		ssize_t kn = seq ? write(kfd, dt_buf, len) : pwrite(kfd, dt_buf, len, (off_t)off);
		kn = kn < 0 ? -errno : kn;
		ssize_t xn = seq ? ext3d_write(f, dt_buf, len) : ext3d_pwrite(f, dt_buf, len, off);
		dt_cmp(seq ? "write" : "pwrite", rel, (int)kn, (int)xn);
		if ((flags & O_ACCMODE) == O_WRONLY && dt_pick(8) == 0) {
			ssize_t kr = pread(kfd, dt_buf2, 16, 0);
			dt_cmp("pread of a write-only file", rel, kr < 0 ? -errno : (int)kr,
			       (int)ext3d_pread(f, dt_buf2, 16, 0));
		}
		if ((flags & O_ACCMODE) == O_RDWR && kn >= 0 && xn >= 0) {
			/* Read back from the start through the same handles. */
			ssize_t kr = pread(kfd, dt_buf, 8192, 0);
			kr = kr < 0 ? -errno : kr;
			ssize_t xr2 = ext3d_pread(f, dt_buf2, 8192, 0);
			dt_cmp("pread after write", rel, (int)kr, (int)xr2);
			if (kr > 0 && kr == xr2 && memcmp(dt_buf, dt_buf2, (size_t)kr))
				dt_mismatch("pread after write %s: bytes differ", rel);
		}
		if (dt_pick(4) == 0) {
			uint64_t size = dt_pick(60000);
			if (dt_trace)
				printf("step %u: ftruncate to %" PRIu64 "\n", dt_step, size);
			dt_cmp("ftruncate", rel, dt_k(ftruncate(kfd, (off_t)size)),
			       ext3d_ftruncate(f, size));
		}
	}
	if (kfd >= 0)
		close(kfd);
	if (f)
		ext3d_close(f);
}

/* open with assorted flags, the handle closed at once. */
static void dt_op_open(const char *rel)
{
	static const int extra[] = {0, O_DIRECTORY, O_NOFOLLOW, O_TRUNC, O_CREAT | O_EXCL,
				    O_NOFOLLOW | O_CREAT};
	static const int acc[] = {O_RDONLY, O_WRONLY, O_RDWR};
	char kp[4400], xp[4400];
	int flags = acc[dt_pick(3)] | extra[dt_pick(6)];
	ext3d_file *f;
	int kr, xr;

	dt_kpath(rel, kp, sizeof(kp));
	dt_xpath(rel, xp, sizeof(xp));
	kr = dt_k(open(kp, flags | O_CLOEXEC, 0640));
	if (kr >= 0) {
		close(kr);
		kr = 0;
	}
	xr = flags & O_CREAT ? ext3d_create(dt_cur, xp, flags, 0640, &f)
			     : ext3d_open(dt_cur, xp, flags, &f);
	if (xr == 0)
		ext3d_close(f);
	char what[64];
	snprintf(what, sizeof(what), "open(flags %#o)", (unsigned)flags);
	dt_cmp(what, rel, kr, xr);
}

static void dt_op_truncate(const char *rel)
{
	static const uint64_t sizes[] = {0, 1, 1023, 4096, 13000, 70000, 300000, 3u << 20};
	char kp[4400], xp[4400];
	uint64_t size = sizes[dt_pick(8)];

	dt_kpath(rel, kp, sizeof(kp));
	dt_xpath(rel, xp, sizeof(xp));
	dt_cmp("truncate", rel, dt_k(truncate(kp, (off_t)size)), ext3d_truncate(dt_cur, xp, size));
}

static void dt_op_two(const char *what, const char *a, const char *b)
{
	char ka[4400], kb[4400], xa[4400], xb[4400], both[9000];
	int kr, xr;

	dt_kpath(a, ka, sizeof(ka));
	dt_kpath(b, kb, sizeof(kb));
	dt_xpath(a, xa, sizeof(xa));
	dt_xpath(b, xb, sizeof(xb));
	if (what[0] == 'r') {
		kr = dt_k(rename(ka, kb));
		xr = ext3d_rename(dt_cur, xa, xb);
	} else {
		kr = dt_k(link(ka, kb));
		xr = ext3d_link(dt_cur, xa, xb);
	}
	snprintf(both, sizeof(both), "%s -> %s", a, b);
	dt_cmp(what, both, kr, xr);
}

static void dt_op_remove(const char *rel, bool dir)
{
	char kp[4400], xp[4400];

	dt_kpath(rel, kp, sizeof(kp));
	dt_xpath(rel, xp, sizeof(xp));
	if (dir)
		dt_cmp("rmdir", rel, dt_k(rmdir(kp)), ext3d_rmdir(dt_cur, xp));
	else
		dt_cmp("unlink", rel, dt_k(unlink(kp)), ext3d_unlink(dt_cur, xp));
}

static void dt_op_symlink(const char *rel)
{
	char kp[4400], xp[4400], target[64];

	dt_target(target, sizeof(target));
	dt_kpath(rel, kp, sizeof(kp));
	dt_xpath(rel, xp, sizeof(xp));
	dt_cmp("symlink", rel, dt_k(symlink(target, kp)), ext3d_symlink(dt_cur, target, xp));
}

/* mknod of regular files only: the kernel's open of a FIFO blocks, of a
 * socket fails, where libext3d has no such files to open. */
static void dt_op_mknod(const char *rel)
{
	char kp[4400], xp[4400];
	uint32_t mode = (dt_pick(2) ? S_IFREG : 0) | (dt_modes[dt_pick(8)] & 07777);

	dt_kpath(rel, kp, sizeof(kp));
	dt_xpath(rel, xp, sizeof(xp));
	dt_cmp("mknod", rel, dt_k(mknod(kp, mode, 0)), ext3d_mknod(dt_cur, xp, mode, 0));
}

static void dt_op_chmod(const char *rel)
{
	char kp[4400], xp[4400];
	uint32_t mode = dt_modes[dt_pick(8)];

	dt_kpath(rel, kp, sizeof(kp));
	dt_xpath(rel, xp, sizeof(xp));
	dt_cmp("chmod", rel, dt_k(chmod(kp, mode)), ext3d_chmod(dt_cur, xp, mode));
}

static void dt_op_chown(const char *rel)
{
	static const uint32_t ids[] = {0, 1000, 65534, (uint32_t)-1};
	char kp[4400], xp[4400];
	uint32_t uid = ids[dt_pick(4)], gid = ids[dt_pick(4)];

	dt_kpath(rel, kp, sizeof(kp));
	dt_xpath(rel, xp, sizeof(xp));
	dt_cmp("chown", rel, dt_k(chown(kp, uid, gid)), ext3d_chown(dt_cur, xp, uid, gid));
}

/* open read-only, fsync (or fdatasync), close. */
static void dt_op_fsync(const char *rel)
{
	char kp[4400], xp[4400];
	bool data = dt_pick(2);
	ext3d_file *f = NULL;
	int kfd, xr;

	dt_kpath(rel, kp, sizeof(kp));
	dt_xpath(rel, xp, sizeof(xp));
	kfd = dt_k(open(kp, O_RDONLY | O_CLOEXEC));
	xr = ext3d_open(dt_cur, xp, O_RDONLY, &f);
	dt_cmp("open for fsync", rel, kfd < 0 ? kfd : 0, xr);
	if (kfd >= 0 && xr == 0)
		dt_cmp(data ? "fdatasync" : "fsync", rel, dt_k(data ? fdatasync(kfd) : fsync(kfd)),
		       data ? ext3d_fdatasync(f) : ext3d_fsync(f));
	if (kfd >= 0)
		close(kfd);
	if (f)
		ext3d_close(f);
}

/* The attributes POSIX makes visible and ext3 defines alike on both
 * sides (a directory's size depends on its history of entries). */
static void dt_cmp_attr(const char *what, const char *rel, const struct stat *st,
			const ext3d_attr *a)
{
	if (st->st_mode != a->mode || st->st_uid != a->uid || st->st_gid != a->gid ||
	    st->st_nlink != a->nlink || (!S_ISDIR(st->st_mode) && (uint64_t)st->st_size != a->size))
		dt_mismatch("%s %s: kernel mode %o uid %u gid %u nlink %u size %jd, ext3d mode %o "
			    "uid %u gid %u nlink %u size %" PRIu64,
			    what, rel, st->st_mode, st->st_uid, st->st_gid, (unsigned)st->st_nlink,
			    (intmax_t)st->st_size, a->mode, a->uid, a->gid, a->nlink, a->size);
}

static void dt_op_stat(const char *rel)
{
	char kp[4400], xp[4400];
	bool follow = dt_pick(2);
	struct stat st;
	ext3d_attr a;
	int kr, xr;

	dt_kpath(rel, kp, sizeof(kp));
	dt_xpath(rel, xp, sizeof(xp));
	kr = dt_k(follow ? stat(kp, &st) : lstat(kp, &st));
	xr = follow ? ext3d_stat(dt_cur, xp, &a) : ext3d_lstat(dt_cur, xp, &a);
	dt_cmp(follow ? "stat" : "lstat", rel, kr, xr);
	if (kr == 0 && xr == 0)
		dt_cmp_attr(follow ? "stat" : "lstat", rel, &st, &a);
}

/* Reads the whole file through both and compares the bytes. */
static void dt_op_read(const char *rel)
{
	char kp[4400], xp[4400];
	ext3d_file *f = NULL;
	int kfd, xr;

	dt_kpath(rel, kp, sizeof(kp));
	dt_xpath(rel, xp, sizeof(xp));
	kfd = dt_k(open(kp, O_RDONLY | O_CLOEXEC));
	xr = ext3d_open(dt_cur, xp, O_RDONLY, &f);
	dt_cmp("open for read", rel, kfd < 0 ? kfd : 0, xr);
	if (kfd >= 0 && xr == 0) {
		ssize_t kn = read(kfd, dt_buf, DT_MAXBUF);
		kn = kn < 0 ? -errno : kn;
		ssize_t xn = ext3d_read(f, dt_buf2, DT_MAXBUF);
		dt_cmp("read", rel, (int)kn, (int)xn);
		if (kn > 0 && kn == xn && memcmp(dt_buf, dt_buf2, (size_t)kn))
			dt_mismatch("read %s: bytes differ", rel);
	}
	if (kfd >= 0)
		close(kfd);
	if (f)
		ext3d_close(f);
}

static void dt_op_readlink(const char *rel)
{
	char kp[4400], xp[4400], kt[4200], xt[4200];
	ssize_t kn, xn;

	dt_kpath(rel, kp, sizeof(kp));
	dt_xpath(rel, xp, sizeof(xp));
	kn = readlink(kp, kt, sizeof(kt));
	kn = kn < 0 ? -errno : kn;
	xn = ext3d_readlink(dt_cur, xp, xt, sizeof(xt));
	dt_cmp("readlink", rel, (int)kn, (int)xn);
	if (kn > 0 && kn == xn && memcmp(kt, xt, (size_t)kn))
		dt_mismatch("readlink %s: targets differ", rel);
}

static void dt_one_op(uint32_t op, char *a, char *b);

static void dt_one(void)
{
	char a[1024], b[1024];
	uint32_t op = dt_pick(100);
	bool user = dt_user && dt_pick(3) == 0;

	dt_cur = user ? dt_user : dt_fs;
	if (user) {
		setfsgid(DT_GID);
		setfsuid(DT_UID);
		if (dt_trace)
			printf("step %u: as uid %u\n", dt_step, DT_UID);
	}
	dt_one_op(op, a, b);
	dt_cur = dt_fs;
	if (user) {
		setfsuid(0);
		setfsgid(0);
	}
}

static void dt_one_op(uint32_t op, char *a, char *b)
{

	dt_path(a, 1024);
	dt_path(b, 1024);
	if (op < 12)
		dt_op_create(a);
	else if (op < 22)
		dt_op_mkdir(a);
	else if (op < 36)
		dt_op_write(a);
	else if (op < 41)
		dt_op_open(a);
	else if (op < 46)
		dt_op_truncate(a);
	else if (op < 54)
		dt_op_two("rename", a, b);
	else if (op < 59)
		dt_op_two("link", a, b);
	else if (op < 65)
		dt_op_remove(a, false);
	else if (op < 70)
		dt_op_remove(a, true);
	else if (op < 73)
		dt_op_symlink(a);
	else if (op < 75)
		dt_op_mknod(a);
	else if (op < 79)
		dt_op_chmod(a);
	else if (op < 82)
		dt_op_chown(a);
	else if (op < 86)
		dt_op_fsync(a);
	else if (op < 92)
		dt_op_stat(a);
	else if (op < 97)
		dt_op_read(a);
	else
		dt_op_readlink(a);
}

/* ---- the trees ---- */

/* Compares the directory rel on both sides, entry by entry, recursively. */
static void dt_tree(const char *rel)
{
	char kp[4400], xp[4400], **names = NULL;
	size_t n = 0, xcount = 0;
	const ext3d_dirent *de;
	struct dirent *ke;
	ext3d_dir *xd;
	DIR *kd;

	dt_kpath(rel, kp, sizeof(kp));
	dt_xpath(rel, xp, sizeof(xp));
	kd = opendir(kp);
	if (!kd || ext3d_opendir(dt_fs, xp, &xd) < 0) {
		dt_mismatch("tree: cannot open directory %s on both sides", rel);
		if (kd)
			closedir(kd);
		return;
	}
	while ((ke = readdir(kd))) {
		if (!strcmp(ke->d_name, ".") || !strcmp(ke->d_name, ".."))
			continue;
		names = realloc(names, (n + 1) * sizeof(*names));
		names[n++] = strdup(ke->d_name);
	}
	closedir(kd);
	while (ext3d_readdir(xd, &de) > 0) {
		if (!strcmp(de->name, ".") || !strcmp(de->name, ".."))
			continue;
		xcount++;
		bool found = false;
		for (size_t i = 0; i < n && !found; i++)
			found = names[i] && !strcmp(names[i], de->name);
		if (!found)
			dt_mismatch("tree: %s/%s only in ext3d", rel, de->name);
	}
	ext3d_closedir(xd);
	if (xcount != n)
		dt_mismatch("tree: %s has %zu entries in the kernel, %zu in ext3d", rel, n, xcount);
	for (size_t i = 0; i < n; i++) {
		char sub[4400], ks[4400], xs[4400];
		struct stat st;
		ext3d_attr a;
		snprintf(sub, sizeof(sub), "%s%s%s", rel, *rel ? "/" : "", names[i]);
		free(names[i]);
		dt_kpath(sub, ks, sizeof(ks));
		dt_xpath(sub, xs, sizeof(xs));
		if (lstat(ks, &st) < 0)
			continue;
		int r = ext3d_lstat(dt_fs, xs, &a);
		if (r < 0) {
			dt_mismatch("tree: %s: only in the kernel (%s)", sub, strerror(-r));
			continue;
		}
		dt_cmp_attr("tree", sub, &st, &a);
		if (S_ISDIR(st.st_mode) && S_ISDIR(a.mode) && strcmp(sub, "lost+found"))
			dt_tree(sub);
		else if (S_ISREG(st.st_mode) && S_ISREG(a.mode))
			dt_op_read(sub);
		else if (S_ISLNK(st.st_mode) && S_ISLNK(a.mode))
			dt_op_readlink(sub);
	}
	free(names);
}

/* The second session: attached with effective ids and groups DT_UID,
 * DT_GID (inode-svc takes the peer's credentials at connect), then back
 * to root. Also leaves the process's groups at DT_GID alone, as the
 * kernel side's fsuid checks take the supplementary groups too. */
static int dt_attach_user(const char *instance)
{
	gid_t g = DT_GID;
	int r;

	if (getuid() != 0)
		return 0; /* not root: every step runs as the caller */
	if (setgroups(1, &g) < 0 || setegid(DT_GID) < 0 || seteuid(DT_UID) < 0)
		return -errno;
	r = ext3d_attach(instance, &dt_user);
	if (seteuid(0) < 0 || setegid(0) < 0)
		return -errno;
	dt_cur = dt_fs;
	return r;
}

int main(int argc, char **argv)
{
	const char *instance = NULL;
	unsigned nops;
	int r;

	if (argc > 2 && strcmp(argv[1], "--instance") == 0) {
		instance = argv[2];
		argv += 2;
		argc -= 2;
	}
	if (argc != 4) {
		fprintf(stderr, "usage: difftest [--instance NAME] MOUNT SEED NOPS\n");
		return 2;
	}
	dt_mnt = argv[1];
	dt_trace = getenv("DIFFTEST_TRACE") != NULL;
	dt_rng = strtoull(argv[2], NULL, 10) * 0x9e3779b97f4a7c15ULL + 1;
	nops = (unsigned)strtoul(argv[3], NULL, 10);
	umask(022);
	dt_buf = malloc(DT_MAXBUF);
	dt_buf2 = malloc(DT_MAXBUF);
	r = ext3d_attach(instance, &dt_fs);
	if (r < 0 || !dt_buf || !dt_buf2) {
		fprintf(stderr, "difftest: attach: %s\n", strerror(-r));
		return 2;
	}
	r = dt_attach_user(instance);
	if (r < 0) {
		fprintf(stderr, "difftest: attach as uid %u: %s\n", DT_UID, strerror(-r));
		return 2;
	}
	for (dt_step = 1; dt_step <= nops; dt_step++)
		dt_one();
	dt_step = 0;
	dt_tree("");
	ext3d_detach(dt_fs);
	ext3d_detach(dt_user);
	free(dt_buf);
	free(dt_buf2);
	if (dt_bad)
		printf("%u mismatches\n", dt_bad);
	return dt_bad ? 1 : 0;
}
