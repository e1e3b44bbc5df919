/*
 * xattr.h - extended attributes and POSIX ACLs in ext3's on-disk format
 * (prefix ino_xattr_, ino_acl_): reading (xattr.c), changing (xattr_w.c,
 * inside an ino_txn) and the ACL encodings (acl.c).
 *
 * An inode's attributes live in its body after i_extra_isize (256-byte
 * inodes: magic 0xEA020000, entries, values packed down from the inode's
 * end) and in one external block (i_file_acl: a 32-byte header with magic,
 * h_refcount, h_blocks = 1 and h_hash, entries sorted by index, name length
 * and name, values 4-byte aligned packed down from the block's end). A
 * block may be shared by several inodes (h_refcount); a change to a shared
 * block copies it first. Names are stored without their namespace prefix,
 * as a name index (INO_XATTR_INDEX_*) and a suffix.
 */
#ifndef INO_XATTR_H
#define INO_XATTR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ext3fs.h"
#include "ext3fs_w.h"

#define INO_XATTR_INDEX_USER 1
#define INO_XATTR_INDEX_ACL_ACCESS 2
#define INO_XATTR_INDEX_ACL_DEFAULT 3
#define INO_XATTR_INDEX_TRUSTED 4
#define INO_XATTR_INDEX_SECURITY 6

/* setxattr(2)'s flags */
#define INO_XATTR_CREATE 0x1
#define INO_XATTR_REPLACE 0x2

/* The longest name suffix ext3 stores, and the longest value the VFS
 * passes (XATTR_SIZE_MAX). */
#define INO_XATTR_NAME_MAX 255
#define INO_XATTR_SIZE_MAX 65536

/* Blocks an attribute change touches: the inode, the superblock (the
 * ext_attr feature), the old block, a new one with its bitmap and
 * descriptor, and freeing the old one (bitmap, descriptor). */
#define INO_CRED_XATTR (INO_CRED_INODE + INO_CRED_SB + 2 + 2 * 2)

/* ---- names (xattr.c) ---- */

/*
 * Splits a full name ("user.foo", "system.posix_acl_access") into its index
 * and suffix (pointing into full). 0, or -EOPNOTSUPP (a namespace ext3
 * does not store), -EINVAL (a prefix with nothing after it), -ERANGE
 * (empty, or a suffix over INO_XATTR_NAME_MAX).
 */
int ino_xattr_name(const char *full, size_t len, int *ret_index, const char **ret_suffix,
		   size_t *ret_slen);

/* ---- reading (xattr.c) ---- */

/*
 * Copies the value of (index, name) into buf: its size, or -ENODATA, or
 * -ERANGE when len is smaller (len 0: the size only, buf unused), or
 * -EUCLEAN (a corrupt attribute area or block, logged), a get() error.
 */
ssize_t ino_xattr_get(ino_fs *fs, const ino_inode *in, int index, const char *name, size_t nlen,
		      void *buf, size_t len);

/* Called for each attribute (in-inode ones first); non-zero stops. */
typedef int ino_xattr_fn(void *ctx, int index, const char *name, size_t nlen, uint32_t vsize);
int ino_xattr_iterate(ino_fs *fs, const ino_inode *in, ino_xattr_fn *fn, void *ctx);

/*
 * listxattr(2): the full names, each NUL-ended, into buf; trusted. names
 * only when trusted is set, unknown indexes skipped. Returns the bytes the
 * list takes, -ERANGE when len is smaller (len 0: the size only), or an
 * error of ino_xattr_iterate.
 */
ssize_t ino_xattr_list(ino_fs *fs, const ino_inode *in, bool trusted, char *buf, size_t len);

/* ---- changing (xattr_w.c) ---- */

/*
 * Sets (index, name) to val (vlen bytes), or removes it when val is NULL,
 * with INO_XATTR_* flags, as ext3_xattr_set_handle: in the inode's body
 * when it fits there, else in the block (copied first when shared,
 * allocated near the inode when missing, freed when it empties). Updates
 * in->file_acl and in->blocks512 and writes in; sets the ext_attr feature.
 * Leaves the times alone. -ENODATA (REPLACE, or removing what is not
 * there), -EEXIST (CREATE), -ENOSPC (too big for the body and a block),
 * -ERANGE (a name too long), -EUCLEAN, -errno of the transaction.
 */
int ino_xattr_set(ino_fs *fs, ino_txn *t, ino_inode *in, int index, const char *name, size_t nlen,
		  const void *val, size_t vlen, int flags);

/* Whether a name of nlen and a value of vlen fit an empty block: when not,
 * ino_xattr_set can only say -ENOSPC (no commit frees room for it). */
bool ino_xattr_fits(const ino_fs *fs, size_t nlen, size_t vlen);

/*
 * Drops in's reference to its attribute block (i_file_acl), freeing the
 * block with the last one, as ext3_xattr_delete_inode: in's file_acl and
 * blocks512 are updated (not written). 0 without a block.
 */
int ino_xattr_drop_block(ino_fs *fs, ino_txn *t, ino_inode *in);

/* ---- POSIX ACLs (acl.c) ---- */

#define INO_ACL_USER_OBJ 0x01
#define INO_ACL_USER 0x02
#define INO_ACL_GROUP_OBJ 0x04
#define INO_ACL_GROUP 0x08
#define INO_ACL_MASK 0x10
#define INO_ACL_OTHER 0x20
#define INO_ACL_UNDEFINED_ID 0xffffffffu
/* More entries than a 4 KiB block's attribute holds: -ENOSPC. */
#define INO_ACL_MAX_ENTRIES 512

typedef struct ino_acl_entry {
	uint16_t tag, perm;
	uint32_t id; /* USER and GROUP only */
} ino_acl_entry;

typedef struct ino_acl {
	uint32_t count; /* 0: no ACL */
	ino_acl_entry e[INO_ACL_MAX_ENTRIES];
} ino_acl;

/* The VFS format (posix_acl_xattr_header version 2): -EINVAL for a bad
 * size, tag or id, -EOPNOTSUPP for another version, -ENOSPC past
 * INO_ACL_MAX_ENTRIES; count 0 for an empty one (no ACL). */
int ino_acl_from_xattr(const void *v, size_t len, ino_acl *ret);
/* Its VFS form: the size (len 0: the size only), -ERANGE if len is short. */
ssize_t ino_acl_to_xattr(const ino_acl *a, void *buf, size_t len);
/* ext3's on-disk format (ext3_acl_header version 1, short entries for the
 * tags without an id): -EINVAL when corrupt. */
int ino_acl_from_disk(const void *v, size_t len, ino_acl *ret);
/* Its on-disk form into buf (room for 8 bytes per entry and 4): the size. */
size_t ino_acl_to_disk(const ino_acl *a, void *buf);
/* posix_acl_valid: the entries in order, one each of USER_OBJ, GROUP_OBJ,
 * OTHER, a MASK with named entries, perms in rwx: 0 or -EINVAL. */
int ino_acl_valid(const ino_acl *a);
/* posix_acl_equiv_mode: sets the permission bits of *mode from a; 0 when
 * the mode says everything a says, 1 when not. */
int ino_acl_equiv_mode(const ino_acl *a, uint16_t *mode);
/* posix_acl_create_masq: a new inode's ACL from its parent's default,
 * masked by the create mode, and the mode from it; 0 when the result is
 * equivalent to the mode (no ACL needed), 1 when not, -EIO if malformed. */
int ino_acl_create_masq(ino_acl *a, uint16_t *mode);
/* __posix_acl_chmod: the owner, mask (or group) and other entries from
 * mode's permission bits. */
void ino_acl_chmod(ino_acl *a, uint16_t mode);

/* The ACL of index (ACCESS or DEFAULT) of in: 0 (count 0: none) or an
 * error of ino_xattr_get, -EUCLEAN for a corrupt stored ACL. */
int ino_acl_get(ino_fs *fs, const ino_inode *in, int index, ino_acl *ret);
/* Stores a as in's ACL of index (count 0: removes it, absent or not);
 * writes in either way. */
int ino_acl_set(ino_fs *fs, ino_txn *t, ino_inode *in, int index, const ino_acl *a);

#endif /* INO_XATTR_H */
