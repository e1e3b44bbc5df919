/* x3-posixseq.c - a deterministic, seeded sequence of POSIX system calls in
 * one directory, to compare two file systems (the kernel's ext3 and ext3d
 * through FUSE): the same seed on two identical fresh images prints the
 * same lines. Each call is chosen from the seed alone (never from what an
 * earlier call returned), runs as root or, in a forked child, as uid 1000
 * or 1001, and prints its arguments, return value and errno, plus which
 * mtimes and ctimes it moved among its paths and their parents (it waits
 * for the coarse clock to tick first, so a change always moves them). A
 * tree dump (x3-pseq-tree.c) closes the run. No absolute time of day and
 * no inode number is ever printed.
 *
 *   x3-posixseq [--no-dump] [--no-xattr] DIR SEED STEPS
 *   x3-posixseq [--no-xattr] --dump DIR     (the tree dump alone)
 * --no-xattr leaves out the xattr and ACL calls, and xattrs from the dump.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "x3-pseq.h"

const ps_user ps_users[] = {
	{ 0, 0, 1, { 0 } },
	{ 1000, 1000, 2, { 1000, 100 } },
	{ 1001, 1001, 1, { 1001 } },
};

static const char *const ps_dirs[] = { ".", "d0", "d1", "sg", "st", "d0/s" };
static const char *const ps_names[] = { "a", "b", "c" };
static const char *const ps_odd[] = { ".", "d0/..", "a/x", "d0/a/x", "st/" };
static const int64_t ps_edges[] = {
	-1, -4096, 1LL << 32, (1LL << 34) - 5000, (1LL << 34) + 4096,
	(1LL << 41) - 5000, (1LL << 41) - 4096, 1LL << 41, (1LL << 41) + 1,
	1LL << 44, INT64_MAX,
};
static const unsigned ps_fmodes[] = { 0644, 0600, 0666, 0755, 0777, 0400, 0000,
	04755, 02755, 06777, 02745, 01777, 07777, 0640 };
static const unsigned ps_dmodes[] = { 0777, 0755, 0700, 02775, 01777, 0750, 0555, 03777 };
/* call weights, by kind (--no-xattr zeroes the xattr and ACL calls) */
static int ps_weights[PS_NKINDS] = {
	[PS_CREATE] = 10, [PS_WRITE] = 10, [PS_READ] = 5, [PS_TRUNC] = 5,
	[PS_FTRUNC] = 3, [PS_RENAME] = 7, [PS_LINK] = 4, [PS_SYMLINK] = 4,
	[PS_READLINK] = 2, [PS_UNLINK] = 5, [PS_RMDIR] = 3, [PS_MKDIR] = 4,
	[PS_MKNOD] = 3, [PS_CHMOD] = 5, [PS_CHOWN] = 5, [PS_UTIMES] = 5,
	[PS_STAT] = 6, [PS_READDIR] = 3, [PS_ACCESS] = 3, [PS_SETXATTR] = 5,
	[PS_GETXATTR] = 3, [PS_LISTXATTR] = 2, [PS_REMOVEXATTR] = 2,
	[PS_SETACL] = 4, [PS_GETACL] = 2, [PS_FSYNC] = 1,
};

static uint64_t ps_rng;

static uint64_t ps_next(void)
{
	uint64_t z = (ps_rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static int64_t ps_rnd(int64_t n)
{
	return n > 0 ? (int64_t)(ps_next() % (uint64_t)n) : 0;
}

#define PS_PICK(arr) ((arr)[ps_rnd((int64_t)(sizeof(arr) / sizeof((arr)[0])))])

static void ps_longname(char *buf, const char *dir, int len)
{
	int n = strcmp(dir, ".") ? snprintf(buf, PS_PATH_MAX, "%s/", dir) : 0;

	memset(buf + n, 'n', (size_t)len);
	buf[n + len] = 0;
}

static void ps_path(char *buf)
{
	int64_t r = ps_rnd(100);
	const char *d = ps_dirs[ps_rnd(6)];

	if (r < 8)
		snprintf(buf, PS_PATH_MAX, "%s", ps_dirs[1 + ps_rnd(5)]);
	else if (r < 11)
		snprintf(buf, PS_PATH_MAX, "%s", PS_PICK(ps_odd));
	else if (r < 15)
		ps_longname(buf, ps_dirs[ps_rnd(5)], ps_rnd(3) ? 255 : 256);
	else if (!strcmp(d, "."))
		snprintf(buf, PS_PATH_MAX, "%s", PS_PICK(ps_names));
	else
		snprintf(buf, PS_PATH_MAX, "%s/%s", d, PS_PICK(ps_names));
}

static int64_t ps_size(void)
{
	int64_t r = ps_rnd(100);

	if (r < 55)
		return ps_rnd(200000);
	if (r < 80)
		return ps_rnd(8 << 20);
	return PS_PICK(ps_edges);
}

static void ps_xname(char *buf)
{
	static const char *const names[] = { "user.a", "user.b", "user.c", "trusted.t",
		"security.s", "bad.ns", "user." };
	int64_t r = ps_rnd(100);

	if (r < 85) {
		snprintf(buf, PS_PATH_MAX, "%s", PS_PICK(names));
		return;
	}
	/* names of 255 and 256 bytes after the prefix */
	int len = r < 95 ? 255 : 256;
	memcpy(buf, "user.", 5);
	memset(buf + 5, 'x', (size_t)len - 5);
	buf[len] = 0;
}

static void ps_gen_kind(ps_op *op)
{
	static const int cflags[] = { O_CREAT | O_WRONLY, O_CREAT | O_EXCL | O_WRONLY,
		O_CREAT | O_TRUNC | O_RDWR, O_WRONLY | O_TRUNC, O_RDONLY | O_CREAT,
		O_WRONLY | O_APPEND | O_CREAT, O_RDONLY | O_TRUNC, O_RDWR | O_APPEND,
		O_DIRECTORY | O_RDONLY | O_CREAT, O_WRONLY | O_CREAT | O_EXCL | O_APPEND };
	static const unsigned nodes[] = { S_IFIFO, S_IFIFO, S_IFCHR, S_IFBLK, S_IFREG, S_IFSOCK };
	static const int64_t vlens[] = { 0, 1, 7, 100, 700, 1000, 3000, 4000, 5000, 70000 };
	static const int64_t ids[] = { -1, 0, 100, 1000, 1001 };

	switch (op->kind) {
	case PS_CREATE:
		op->flags = PS_PICK(cflags);
		op->mode = PS_PICK(ps_fmodes);
		op->b = ps_rnd(3) ? ps_rnd(6000) : 0;
		break;
	case PS_WRITE:
		op->flags = ps_rnd(4) ? O_WRONLY : O_WRONLY | O_APPEND;
		op->a = ps_rnd(10) ? ps_size() : ps_rnd(4096);
		op->b = 1 + ps_rnd(ps_rnd(4) ? 20000 : 200000);
		break;
	case PS_READ:
		op->a = ps_rnd(8) ? ps_rnd(300000) : PS_PICK(ps_edges);
		op->b = 1 + ps_rnd(65536);
		break;
	case PS_TRUNC:
	case PS_FTRUNC:
		op->a = ps_size();
		op->flags = ps_rnd(6) ? O_WRONLY : O_RDONLY;
		break;
	case PS_RENAME:
		op->flags = (int)PS_PICK(((const int[]){ 0, 0, 0, RENAME_NOREPLACE, RENAME_EXCHANGE }));
		break;
	case PS_SYMLINK:
		/* a target from the path pool, or one of the lengths around
		 * the fast-symlink limit, the block size and PATH_MAX */
		if (ps_rnd(3))
			ps_path(op->p1);
		else
			op->a = PS_PICK(((const int64_t[]){ 1, 10, 59, 60, 61, 200, 1023, 1024, 4095, 4096 }));
		break;
	case PS_MKDIR:
		op->mode = PS_PICK(ps_dmodes);
		break;
	case PS_MKNOD:
		op->mode = PS_PICK(nodes) | PS_PICK(ps_fmodes);
		op->a = (int64_t)makedev(0, 1 + ps_rnd(999)); /* major 0: no driver */
		break;
	case PS_CHMOD:
		op->mode = ps_rnd(2) ? PS_PICK(ps_fmodes) : PS_PICK(ps_dmodes);
		break;
	case PS_CHOWN:
		op->a = PS_PICK(ids);
		op->b = PS_PICK(ids);
		op->flags = ps_rnd(3) ? 0 : AT_SYMLINK_NOFOLLOW;
		break;
	case PS_UTIMES:
		for (int i = 0; i < 2; i++) {
			int64_t r = ps_rnd(3);

			op->t[i] = r == 0 ? -1 : r == 1 ? -2 : 1000000000LL * (1000000000 + ps_rnd(100000000)) + ps_rnd(1000000000);
		}
		op->flags = ps_rnd(4) ? 0 : AT_SYMLINK_NOFOLLOW;
		op->a = ps_rnd(6) == 0; /* times == NULL */
		break;
	case PS_ACCESS:
		op->mode = (unsigned)PS_PICK(((const int[]){ F_OK, R_OK, W_OK, X_OK, R_OK | W_OK }));
		op->flags = ps_rnd(2) ? 0 : AT_EACCESS;
		break;
	case PS_SETXATTR:
		ps_xname(op->p1);
		op->b = PS_PICK(vlens) + ps_rnd(3);
		op->flags = (int)PS_PICK(((const int[]){ 0, 0, 1, 2 })); /* XATTR_CREATE, _REPLACE */
		break;
	case PS_GETXATTR:
	case PS_REMOVEXATTR:
		ps_xname(op->p1);
		op->b = PS_PICK(((const int64_t[]){ 0, PS_VAL_MAX, PS_VAL_MAX, 3 }));
		break;
	case PS_LISTXATTR:
		op->b = PS_PICK(((const int64_t[]){ 0, PS_VAL_MAX, PS_VAL_MAX, 3 }));
		break;
	case PS_SETACL:
	case PS_GETACL:
		op->flags = ps_rnd(3) == 0; /* the default ACL */
		op->a = (int64_t)ps_rnd(1 << 30);
		break;
	}
}

static void ps_gen(ps_op *op)
{
	int total = 0, r;

	memset(op, 0, sizeof(*op));
	for (int k = 0; k < PS_NKINDS; k++)
		total += ps_weights[k];
	r = (int)ps_rnd(total);
	while (r >= ps_weights[op->kind])
		r -= ps_weights[op->kind++];
	r = (int)ps_rnd(100);
	op->who = r < 60 ? 0 : r < 85 ? 1 : 2;
	ps_path(op->p0);
	if (op->kind == PS_RENAME || op->kind == PS_LINK)
		ps_path(op->p1);
	op->dseed = ps_next();
	ps_gen_kind(op);
}

/* Waits until the coarse clock (the kernel's timestamp source) ticks. */
static void ps_wait_tick(void)
{
	struct timespec a, b, pause = { 0, 200000 };

	clock_gettime(CLOCK_REALTIME_COARSE, &a);
	do {
		nanosleep(&pause, NULL);
		clock_gettime(CLOCK_REALTIME_COARSE, &b);
	} while (a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec);
}

/* Runs op as its user: in a forked child that drops to it, the output
 * coming back through a pipe. */
static void ps_run_as(const ps_op *op, ps_out *o)
{
	const ps_user *u = &ps_users[op->who];
	int pfd[2];
	ssize_t n;
	pid_t pid;

	if (op->who == 0) {
		ps_exec(op, o);
		return;
	}
	if (pipe(pfd) < 0) {
		ps_printf(o, "pipe: %s", strerror(errno));
		return;
	}
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		close(pfd[0]);
		if (setgroups((size_t)u->ngroups, u->groups) < 0 || setresgid(u->gid, u->gid, u->gid) < 0 ||
		    setresuid(u->uid, u->uid, u->uid) < 0)
			ps_printf(o, "dropping to uid %u: %s", u->uid, strerror(errno));
		else
			ps_exec(op, o);
		for (size_t off = 0; off < o->len; off += (size_t)n)
			if ((n = write(pfd[1], o->buf + off, o->len - off)) <= 0)
				break;
		_exit(0);
	}
	close(pfd[1]);
	while (pid > 0 && o->len < sizeof(o->buf) - 1 &&
	       (n = read(pfd[0], o->buf + o->len, sizeof(o->buf) - 1 - o->len)) > 0)
		o->len += (size_t)n;
	o->buf[o->len] = 0;
	close(pfd[0]);
	if (pid < 0)
		ps_printf(o, "fork: %s", strerror(errno));
	else
		waitpid(pid, NULL, 0);
}

static void ps_parent(char *buf, const char *p)
{
	const char *s = strrchr(p, '/');

	if (!s)
		snprintf(buf, PS_PATH_MAX, ".");
	else
		snprintf(buf, PS_PATH_MAX, "%.*s", s == p ? 1 : (int)(s - p), p);
}

/* The paths whose times a call may move: its paths and their parents. */
typedef struct ps_watch {
	int n;
	char path[4][PS_PATH_MAX];
	int ok[4];
	struct stat st[4];
} ps_watch;

static void ps_watch_init(ps_watch *w, const ps_op *op)
{
	char cand[4][PS_PATH_MAX];
	int has1 = op->kind == PS_RENAME || op->kind == PS_LINK;

	snprintf(cand[0], PS_PATH_MAX, "%s", op->p0);
	ps_parent(cand[1], op->p0);
	snprintf(cand[2], PS_PATH_MAX, "%s", has1 ? op->p1 : op->p0);
	ps_parent(cand[3], has1 ? op->p1 : op->p0);
	w->n = 0;
	for (int i = 0; i < 4; i++) {
		int dup = 0;

		for (int j = 0; j < w->n; j++)
			dup |= !strcmp(w->path[j], cand[i]);
		if (!dup)
			memcpy(w->path[w->n++], cand[i], PS_PATH_MAX);
	}
	for (int i = 0; i < w->n; i++)
		w->ok[i] = lstat(w->path[i], &w->st[i]) == 0;
}

static int ps_moved(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec != b->tv_sec || a->tv_nsec != b->tv_nsec;
}

static void ps_watch_print(const ps_watch *w, ps_out *o)
{
	const char *sep = " |";

	for (int i = 0; i < w->n; i++) {
		struct stat st;
		int ok = lstat(w->path[i], &st) == 0;
		const char *name = strlen(w->path[i]) > 40 ? "LONG" : w->path[i];

		if (!ok && !w->ok[i])
			continue;
		if (!w->ok[i])
			ps_printf(o, "%s %s:new", sep, name);
		else if (!ok)
			ps_printf(o, "%s %s:gone", sep, name);
		else if (st.st_ino != w->st[i].st_ino || st.st_dev != w->st[i].st_dev)
			ps_printf(o, "%s %s:repl", sep, name);
		else
			ps_printf(o, "%s %s:%c%c", sep, name, ps_moved(&st.st_mtim, &w->st[i].st_mtim) ? 'm' : '-',
				  ps_moved(&st.st_ctim, &w->st[i].st_ctim) ? 'c' : '-');
		sep = "";
	}
}

static void ps_step(const char *label, const ps_op *op)
{
	ps_watch w;
	ps_out o = { .len = 0 };

	ps_wait_tick();
	ps_watch_init(&w, op);
	ps_run_as(op, &o);
	ps_watch_print(&w, &o);
	printf("%s u%u %s\n", label, ps_users[op->who].uid, o.buf);
	fflush(stdout);
}

/* The directories every sequence starts from: plain, owned by uid 1000,
 * set-gid with group 100, sticky, nested. */
static void ps_setup(void)
{
	static const struct { int kind; const char *p; unsigned mode; int64_t a, b; } s[] = {
		{ PS_CHMOD, ".", 0777, 0, 0 },          { PS_MKDIR, "d0", 0777, 0, 0 },
		{ PS_MKDIR, "d1", 0755, 0, 0 },         { PS_CHOWN, "d1", 0, 1000, 1000 },
		{ PS_MKDIR, "sg", 0775, 0, 0 },         { PS_CHOWN, "sg", 0, 0, 100 },
		{ PS_CHMOD, "sg", 02777, 0, 0 },        { PS_MKDIR, "st", 0777, 0, 0 },
		{ PS_CHMOD, "st", 01777, 0, 0 },        { PS_MKDIR, "d0/s", 0777, 0, 0 },
		{ PS_CHMOD, "d0/s", 0777, 0, 0 },
	};
	char label[24];
	ps_op op;

	for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++) {
		memset(&op, 0, sizeof(op));
		op.kind = s[i].kind;
		snprintf(op.p0, sizeof(op.p0), "%s", s[i].p);
		op.mode = s[i].mode;
		op.a = s[i].a;
		op.b = s[i].b;
		snprintf(label, sizeof(label), "s%zu", i);
		ps_step(label, &op);
	}
}

int main(int argc, char **argv)
{
	int dump = 1, arg = 1;
	char label[24];
	long steps;
	ps_op op;

	for (; arg < argc && !strncmp(argv[arg], "--no-", 5); arg++) {
		if (!strcmp(argv[arg], "--no-dump"))
			dump = 0;
		for (int k = PS_SETXATTR; k <= PS_GETACL && !strcmp(argv[arg], "--no-xattr"); k++)
			ps_weights[k] = 0, ps_no_xattr = 1;
	}
	if (argc - arg == 2 && !strcmp(argv[arg], "--dump"))
		return chdir(argv[arg + 1]) < 0 || ps_tree_dump() < 0 ? 1 : 0;
	if (argc - arg != 3) {
		fprintf(stderr, "usage: x3-posixseq [--no-dump] [--no-xattr] DIR SEED STEPS | [--no-xattr] --dump DIR\n");
		return 2;
	}
	if (chdir(argv[arg]) < 0) {
		fprintf(stderr, "x3-posixseq: %s: %s\n", argv[arg], strerror(errno));
		return 1;
	}
	ps_rng = strtoull(argv[arg + 1], NULL, 0);
	steps = strtol(argv[arg + 2], NULL, 0);
	umask(022);
	printf("x3-posixseq seed %s steps %ld\n", argv[arg + 1], steps);
	ps_setup();
	for (long i = 0; i < steps; i++) {
		ps_gen(&op);
		snprintf(label, sizeof(label), "%ld", i);
		ps_step(label, &op);
	}
	return dump && ps_tree_dump() < 0 ? 1 : 0;
}
