/*
 * xattr_int.h - what xattr.c and xattr_w.c share: the on-disk entry, an
 * attribute area (the inode body's or a block's) as a region of memory
 * with its checks and its search.
 */
#ifndef INO_XATTR_INT_H
#define INO_XATTR_INT_H

#include "internal.h"
#include "xattr.h"

#define INO_XATTR_MAGIC 0xEA020000u
#define INO_XA_HDR 32	/* the block header */
#define INO_XA_ENTRY 16 /* an entry before its name */
#define INO_XA_LEN(n) (((uint32_t)(n) + INO_XA_ENTRY + 3) & ~3u)
#define INO_XA_SIZE(s) (((uint32_t)(s) + 3) & ~3u)

/* ext3_xattr_entry: 4-byte aligned in the area, a zero word ends them. */
struct ino_xa_entry {
	uint8_t name_len;
	uint8_t name_index;
	cm_le16_t value_offs;  /* from the region's base */
	cm_le32_t value_block; /* 0 (ext3 never sets it) */
	cm_le32_t value_size;
	cm_le32_t hash;
	char name[];
};

/* ext3_xattr_header of an attribute block. */
struct ino_xa_header {
	cm_le32_t magic;
	cm_le32_t refcount;
	cm_le32_t blocks;
	cm_le32_t hash;
	cm_le32_t reserved[4];
};
_Static_assert(sizeof(struct ino_xa_header) == INO_XA_HDR, "xattr header");
_Static_assert(sizeof(struct ino_xa_entry) == INO_XA_ENTRY, "xattr entry");

/* An attribute area in memory. */
typedef struct ino_xa_rgn {
	uint8_t *base;	   /* value offsets count from here */
	uint8_t *first;	   /* the first entry */
	uint8_t *end;	   /* the end of the area */
	uint8_t *last;	   /* the zero word after the entries (checked) */
	uint32_t min_offs; /* lowest value offset; end - base if none */
} ino_xa_rgn;

static inline struct ino_xa_entry *ino_xa_next(struct ino_xa_entry *e)
{
	return (struct ino_xa_entry *)((uint8_t *)e + INO_XA_LEN(e->name_len));
}

static inline bool ino_xa_is_last(const uint8_t *p)
{
	return p[0] == 0 && p[1] == 0 && p[2] == 0 && p[3] == 0;
}

/*
 * Checks the entries of r (each inside the area, a terminator before its
 * end, values inside it past the entries, no value block) and sets
 * r->last and r->min_offs: 0 or -EUCLEAN with why.
 */
int ino_xa_check(ino_xa_rgn *r, char *why, size_t whylen);

/*
 * Looks (index, name) up in a checked r: 0 and *ret the entry, or 1 and
 * *ret where it would go: before the first greater entry when sorted (the
 * block's order: index, name length, name), else at the end.
 */
int ino_xa_find(const ino_xa_rgn *r, int index, const char *name, size_t nlen, bool sorted,
		struct ino_xa_entry **ret);

/* The inode body's area of in, if it can have one: its offset in the
 * inode slot and its length (magic included). False on 128-byte inodes
 * and without i_extra_isize. */
bool ino_xa_ibody_span(const ino_fs *fs, const ino_inode *in, uint32_t *off, uint32_t *len);

/* A region over a body area copy (area: magic, then entries). */
void ino_xa_rgn_body(ino_xa_rgn *r, uint8_t *area, uint32_t len);
/* A region over a block copy. */
void ino_xa_rgn_block(ino_xa_rgn *r, uint8_t *blk, uint32_t bs);
/* Checks a block's header (magic, h_blocks 1, refcount not 0). */
bool ino_xa_header_ok(const struct ino_xa_header *h);

/*
 * Copies in's body area (*ret, malloc'ed; NULL when the inode can have
 * none, or holds no magic and empty is false; zeroed when it holds no
 * magic and empty is set) or its block (*ret NULL without i_file_acl) and
 * checks it into *r: 0 or -EUCLEAN (logged), -errno.
 */
int ino_xa_load_body(ino_fs *fs, const ino_inode *in, bool empty, uint8_t **ret, ino_xa_rgn *r);
int ino_xa_load_block(ino_fs *fs, const ino_inode *in, uint8_t **ret, ino_xa_rgn *r);

/* Logs a corrupt attribute area of ino (blk 0: in the inode). */
void ino_xa_warn(uint32_t ino, uint64_t blk, const char *why);

#endif /* INO_XATTR_INT_H */
