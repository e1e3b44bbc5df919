/* x3-pseq.h - what the three parts of x3-posixseq share: one generated
 * call (ps_op), the users it runs as, the output buffer each call prints
 * into, and the hash used for file bytes and xattr values.
 */
#ifndef X3_PSEQ_H
#define X3_PSEQ_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#define PS_PATH_MAX 600
#define PS_OUT_MAX 8192
#define PS_VAL_MAX 70000

enum {
	PS_CREATE, PS_WRITE, PS_READ, PS_TRUNC, PS_FTRUNC, PS_RENAME, PS_LINK,
	PS_SYMLINK, PS_READLINK, PS_UNLINK, PS_RMDIR, PS_MKDIR, PS_MKNOD,
	PS_CHMOD, PS_CHOWN, PS_UTIMES, PS_STAT, PS_READDIR, PS_ACCESS,
	PS_SETXATTR, PS_GETXATTR, PS_LISTXATTR, PS_REMOVEXATTR, PS_SETACL,
	PS_GETACL, PS_FSYNC, PS_NKINDS
};

/* One user a call runs as: root, or a forked child that drops to it. */
typedef struct ps_user {
	uid_t uid;
	gid_t gid;
	int ngroups;
	gid_t groups[4];
} ps_user;

/* One call, fully chosen before it runs: what it does depends only on
 * the seed, never on what earlier calls returned. */
typedef struct ps_op {
	int kind;
	int who;                /* index into ps_users */
	char p0[PS_PATH_MAX];
	char p1[PS_PATH_MAX];   /* second path, symlink target, xattr name */
	int flags;
	unsigned mode;
	int64_t a, b;           /* offsets, sizes, lengths, owner ids */
	uint64_t dseed;         /* seeds the bytes written or set */
	int64_t t[2];           /* utimensat: <0 UTIME_NOW/OMIT, else ns */
} ps_op;

typedef struct ps_out {
	char buf[PS_OUT_MAX];
	size_t len;
} ps_out;

extern const ps_user ps_users[];
extern int ps_no_xattr; /* the dump leaves xattrs out */

void ps_printf(ps_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* " = RET" or " = -1 ENAME" after a call that set errno on failure. */
void ps_ret(ps_out *o, long r, int err);
uint64_t ps_hash(uint64_t h, const void *p, size_t n);
void ps_fill(unsigned char *buf, size_t n, uint64_t seed);
/* The stat fields ext3 defines, times as "recent" or the explicit value. */
void ps_stat_fields(ps_out *o, const struct stat *st);

/* Runs op as the calling process (already the right user); prints it. */
void ps_exec(const ps_op *op, ps_out *o);
/* Prints the tree under "." (names sorted, inodes as link groups). */
int ps_tree_dump(void);

#endif
