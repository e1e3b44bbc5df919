/* ops.h - inode-svc's request handlers and what they share: inode locks
 * (ilock.c), the inodes held open by sessions (grant.c), the last
 * transaction of each inode for fsync (tidtab.c), name and inode helpers
 * (ops.c), permission rules (perm.c).
 *
 * Every write handler is one POSIX operation in one transaction: it takes
 * the inode locks of every inode it changes (ino_ilock), checks, starts the
 * transaction (ino_txn_start with the caller's credentials), changes,
 * stops it (ino_op_stop notes the transaction for fsync) and unlocks.
 * Lock order: rename lock -> inode stripes (index order) -> journal handle
 * -> a session's grants.mtx -> holds_mtx (grant.c).
 */
#ifndef INO_OPS_H
#define INO_OPS_H

#include "internal.h"
#include "xattr.h"

typedef int ino_handler(ino_session *ss, const ino_creds *c, const cm_fs_req *rq,
			cm_fs_resp *rs, uint8_t *data);

/* ext3's EXT3_LINK_MAX */
#define INO_LINK_MAX 32000

/* ---- ilock.c ---- */
#define INO_ILOCK_MAX 4
typedef struct ino_ilockset {
	unsigned n;
	unsigned stripes[INO_ILOCK_MAX];
} ino_ilockset;
/* Write-locks the stripes of inos (up to INO_ILOCK_MAX; 0s skipped). */
void ino_ilock(ino_ilockset *ls, const uint32_t *inos, unsigned n);
void ino_iunlock(ino_ilockset *ls);
void ino_ilock_shared(uint32_t ino);
void ino_iunlock_shared(uint32_t ino);
void ino_rename_lock(void);
void ino_rename_unlock(void);

/* ---- grant.c: inodes held open ----
 * An inode granted to any session is held: its last unlink puts it on the
 * orphan list instead of freeing it, and the last hold's end frees it. */
unsigned ino_hold_count(uint32_t ino);
/* Marks a held inode as orphaned (freed when the last hold goes): true, or
 * false when nobody holds it (the caller frees it now). */
bool ino_hold_orphan(uint32_t ino);
/* Whether ino was unlinked while held and is still held (not yet freed). */
bool ino_hold_is_orphan(uint32_t ino);
/* Gives back every grant of a session that ends. */
void ino_grants_release(ino_session *ss);

/* ---- tidtab.c: the last transaction that changed an inode ---- */
/* data: the change matters to fdatasync (not timestamps only). */
void ino_tid_note(uint32_t ino, uint32_t tid, bool data);
/* The transaction to wait for; false when there is none to wait for. */
bool ino_tid_last(uint32_t ino, bool data, uint32_t *ret);

/* ---- ops.c ---- */
/* At start, before sessions: the journal, then the orphan list. */
int ino_ops_start(ino_svc *s);
void ino_attr_fill(ino_svc *s, const ino_inode *in, cm_fs_attr *a);
/* A *_DIRATTR reply: dir's attributes into the data buffer, rs->length. */
void ino_attr_reply_data(ino_svc *s, const ino_inode *dir, cm_fs_resp *rs, uint8_t *data);
/* Reads inode ino for a request: in use, or unlinked but still held. */
int ino_op_read(ino_svc *s, uint64_t ino, ino_inode *in);
/* The request's name: -EINVAL for '/' or NUL, -ENAMETOOLONG past 255,
 * -ENOENT when empty; 1 for "." or "..", else 0. */
int ino_name_check(const char *name, size_t len);
/* Looks name up in dir (read, a directory): *ret gets the inode or 0. */
int ino_op_lookup(ino_svc *s, const ino_inode *dir, const char *name, size_t len,
		  uint32_t *ret);
/* Locks dir and the inode its entry name names (the directory read and
 * searchable, the entry there: -ENOENT if not), retrying while the name
 * moves; returns with both locked and read (ino_iunlock(ls) after). */
int ino_op_lock_entry(ino_svc *s, const ino_creds *c, uint32_t dirino, const char *name,
		      size_t len, ino_ilockset *ls, ino_inode *dir, ino_inode *child);
/* dir loses a subdirectory (its ".."): one link less, never below 2, as
 * the kernel's ext4_dec_count, so that a damaged count never frees a
 * directory that still has a name. */
void ino_op_lose_subdir(ino_inode *dir);
/* dir gains a subdirectory: one link more, except that an indexed
 * directory whose count is 1 (the count ext4's dir_nlink leaves to a
 * directory with too many subdirectories, which e2fsck accepts) keeps 1,
 * as the kernel's ext4_inc_count. */
void ino_op_gain_subdir(ino_inode *dir);
/* Before a name of in goes: when it is in's last, in must be one that
 * can be freed (ino_map_check), or the name stays. 0 or -EUCLEAN. */
int ino_op_may_unlink(ino_svc *s, const ino_inode *in);
/* in lost a link (already taken off in's count): writes it, and at zero
 * puts it on the orphan list if held, else frees it. */
int ino_op_unlinked(ino_svc *s, ino_txn *t, ino_inode *in);
/* Frees an orphaned inode whose last hold went (grant.c calls it). */
void ino_op_release(ino_svc *s, uint32_t ino);
/* After a transaction failed with r: true when a commit was made for
 * another try, at most INO_RETRIES per operation: r is -ENOSPC (the
 * commit makes the blocks and inodes freed before it usable) or -ENOMEM
 * (the buffer cache is full of buffers the running transaction pins: its
 * ordered data and metadata; the commit writes the data home and lets the
 * journal checkpoint the rest). Called with no transaction open. */
#define INO_RETRIES 3
bool ino_op_retry(ino_svc *s, int r, int *retries);
/* Stops t, a change the caller acknowledges to its client, and notes its
 * tid for the n inodes it changed (fsync) and for the instance's error
 * sequence (sync). */
int ino_op_stop(ino_txn *t, const uint32_t *inos, unsigned n, bool data);

/* ---- perm.c ---- */
bool ino_cred_in_group(const ino_creds *c, uint32_t gid);
/* The caller owns in, or is root. */
bool ino_owner(const ino_inode *in, const ino_creds *c);
/* Root, or creds a privileged peer has checked (CM_FS_CREDS_CHECKED):
 * what the kernel's capable(CAP_FOWNER / CAP_FSETID) lets through. */
bool ino_capable(const ino_creds *c);
/* may_delete's -EPERM: may c remove or replace victim in dir? Not from
 * an append-only dir, not an immutable or append-only victim, and in a
 * sticky dir only as the owner of either. */
int ino_perm_sticky(const ino_inode *dir, const ino_inode *victim, const ino_creds *c);
/* vfs_mknod: a character or block device (but a whiteout, char 0:0)
 * needs CAP_MKNOD, here root or checked creds. 0 or -EPERM. */
int ino_perm_mknod(uint32_t mode, uint32_t rdev, const ino_creds *c);
/* may_linkat under fs.protected_hardlinks: who neither owns in nor is
 * capable may link it only if it is a regular file, not set-uid, not
 * set-gid with group execution, that c may read and write. 0 or -EPERM. */
int ino_perm_link(const ino_inode *in, const ino_creds *c);

/* Called once at start, before the sandbox: the filesystem whose ACLs
 * ino_perm consults, and fs.protected_hardlinks. */
void ino_perm_setup(ino_fs *fs);

/* ---- ops_ns.c ---- */
/* The owner of a new inode as inode_init_owner gives it: a set-group-ID
 * directory passes on its group (and, to directories, the bit). */
void ino_create_owner(const ino_creds *c, const ino_inode *dir, uint16_t *mode, uint32_t *gid);

/* ---- ops_xattr.c: ACLs in other operations ---- */
/* A new inode's ACLs, from its directory's default ACL. */
typedef struct ino_newacl {
	ino_acl access;     /* count 0: none */
	ino_acl dflt;       /* directories only */
} ino_newacl;
/* posix_acl_create: the mode of a new inode in dir (*mode, its type
 * included) masked by dir's default ACL, or by umask (when use_umask) if
 * dir has none; *ret the ACLs it gets. */
int ino_acl_inherit(ino_svc *s, const ino_inode *dir, uint16_t *mode, bool use_umask,
		    uint32_t umask, ino_newacl *ret);
/* Stores them on the new inode, inside the create's transaction (needs
 * 2 * INO_CRED_XATTR credits). */
int ino_acl_store_new(ino_svc *s, ino_txn *t, ino_inode *in, const ino_newacl *na);
/* posix_acl_chmod: in's access ACL, if any, takes in's new mode (needs
 * INO_CRED_XATTR credits). */
int ino_acl_follow_mode(ino_svc *s, ino_txn *t, ino_inode *in);

/* ---- ops_flags.c: inode flags, immutable and append-only ---- */
/* in's flags as FS_IOC_GETFLAGS shows them (ext4's user-visible set). */
uint32_t ino_flags_visible(const ino_inode *in);
/* The flags a new inode of mode takes from dir (__ext4_new_inode). */
uint32_t ino_flags_inherit(const ino_inode *dir, uint16_t mode);
/* Mode, owner, times set, truncation, a link: -EPERM if in is immutable
 * or append-only. */
int ino_flags_may_change(const ino_inode *in);
/* A write (at_end: O_APPEND's): -EPERM if in is immutable, or
 * append-only and the write is not at its end. */
int ino_flags_may_write(const ino_inode *in, bool at_end);

/* ---- ops_atime.c ---- */
/* setattr's CM_FS_SET_ATIME_ACCESS: a read's access time, as relatime. */
int ino_setattr_access(ino_svc *s, const ino_creds *c, uint64_t ino, cm_fs_resp *rs);

/* ---- the handlers (ops_ns.c, ops_rm.c, ops_rename.c, ops_data.c, ops_xattr.c, ops_seek.c,
 * ops_flags.c, ops_fiemap.c) ---- */
ino_handler ino_h_mknod, ino_h_symlink, ino_h_link, ino_h_unlink, ino_h_rmdir, ino_h_rename,
	ino_h_write, ino_h_setattr, ino_h_fallocate, ino_h_fsync, ino_h_sync, ino_h_getxattr,
	ino_h_setxattr, ino_h_listxattr, ino_h_removexattr, ino_h_lseek, ino_h_setflags,
	ino_h_fiemap;

#endif
