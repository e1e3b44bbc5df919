/*
 * xattr.c - reading extended attributes: the namespace prefixes and their
 * name indexes, an attribute area's checks and search (shared with
 * xattr_w.c), and get, iterate and list over an inode's body area and its
 * block (ext3_xattr_get, ext3_xattr_list). Areas are copied out of the
 * block source before they are looked at, so a caller never holds a block;
 * everything read is untrusted (-EUCLEAN, logged with the inode and block).
 */
#include "xattr_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

static const struct {
	int index;
	const char *prefix;
	bool whole; /* the prefix is the whole name */
} ino_xa_prefixes[] = {
    {INO_XATTR_INDEX_USER, "user.", false},
    {INO_XATTR_INDEX_ACL_ACCESS, "system.posix_acl_access", true},
    {INO_XATTR_INDEX_ACL_DEFAULT, "system.posix_acl_default", true},
    {INO_XATTR_INDEX_TRUSTED, "trusted.", false},
    {INO_XATTR_INDEX_SECURITY, "security.", false},
};
#define INO_XA_NPREFIX (sizeof(ino_xa_prefixes) / sizeof(ino_xa_prefixes[0]))

int ino_xattr_name(const char *full, size_t len, int *ret_index, const char **ret_suffix,
		   size_t *ret_slen)
{
	if (len == 0 || len > INO_XATTR_NAME_MAX)
		return -ERANGE;
	for (size_t i = 0; i < INO_XA_NPREFIX; i++) {
		const char *p = ino_xa_prefixes[i].prefix;
		size_t pl = strlen(p);

		if (ino_xa_prefixes[i].whole ? len != pl || memcmp(full, p, pl) != 0
					     : len < pl || memcmp(full, p, pl) != 0)
			continue;
		if (!ino_xa_prefixes[i].whole && len == pl)
			return -EINVAL;
		*ret_index = ino_xa_prefixes[i].index;
		*ret_suffix = full + pl;
		*ret_slen = len - pl;
		return 0;
	}
	return -EOPNOTSUPP;
}

bool ino_xattr_fits(const ino_fs *fs, size_t nlen, size_t vlen)
{
	return nlen <= INO_XATTR_NAME_MAX && vlen <= INO_XATTR_SIZE_MAX &&
	       INO_XA_HDR + INO_XA_LEN(nlen) + 4 + INO_XA_SIZE(vlen) <= fs->geom.block_size;
}

void ino_xa_warn(uint32_t ino, uint64_t blk, const char *why)
{
	if (blk)
		cm_warn("corrupt inode ino=%u blk=%llu: xattr block: %s", ino,
			(unsigned long long)blk, why);
	else
		cm_warn("corrupt inode ino=%u: in-inode xattrs: %s", ino, why);
}

int ino_xa_check(ino_xa_rgn *r, char *why, size_t whylen)
{
	uint8_t *p = r->first;
	uint32_t min = (uint32_t)(r->end - r->base), size = min;

	for (;;) {
		struct ino_xa_entry *e = (struct ino_xa_entry *)p;

		if (p + 4 > r->end) {
			snprintf(why, whylen, "entries run past the end");
			return -EUCLEAN;
		}
		if (ino_xa_is_last(p))
			break;
		if (p + INO_XA_ENTRY > r->end || p + INO_XA_LEN(e->name_len) + 4 > r->end) {
			snprintf(why, whylen, "entry at %td runs past the end", p - r->base);
			return -EUCLEAN;
		}
		p += INO_XA_LEN(e->name_len);
	}
	r->last = p;
	for (p = r->first; p < r->last; p += INO_XA_LEN(p[0])) {
		struct ino_xa_entry *e = (struct ino_xa_entry *)p;
		uint32_t offs = cm_le16(e->value_offs), vs = cm_le32(e->value_size);

		if (cm_le32(e->value_block) != 0) {
			snprintf(why, whylen, "entry at %td has a value block", p - r->base);
			return -EUCLEAN;
		}
		if (vs == 0)
			continue;
		if (vs > size || offs > size - vs || r->base + offs < r->last + 4 || (offs & 3)) {
			snprintf(why, whylen, "value of entry at %td out of place (%u+%u)",
				 p - r->base, offs, vs);
			return -EUCLEAN;
		}
		if (offs < min)
			min = offs;
	}
	r->min_offs = min;
	return 0;
}

/* The block's order: index, then name length, then name. */
static int ino_xa_cmp(int index, const char *name, size_t nlen, const struct ino_xa_entry *e)
{
	int c = index - e->name_index;

	if (c == 0)
		c = (int)nlen - e->name_len;
	if (c == 0)
		c = memcmp(name, e->name, nlen);
	return c;
}

int ino_xa_find(const ino_xa_rgn *r, int index, const char *name, size_t nlen, bool sorted,
		struct ino_xa_entry **ret)
{
	uint8_t *p;

	for (p = r->first; p < r->last; p += INO_XA_LEN(p[0])) {
		struct ino_xa_entry *e = (struct ino_xa_entry *)p;
		int c = ino_xa_cmp(index, name, nlen, e);

		if (c == 0) {
			*ret = e;
			return 0;
		}
		if (c < 0 && sorted)
			break;
	}
	*ret = (struct ino_xa_entry *)p;
	return 1;
}

bool ino_xa_ibody_span(const ino_fs *fs, const ino_inode *in, uint32_t *off, uint32_t *len)
{
	uint32_t isize = fs->geom.inode_size;
	uint32_t start = EXT3_GOOD_OLD_INODE_SIZE + in->extra_isize;

	if (isize <= EXT3_GOOD_OLD_INODE_SIZE || in->extra_isize == 0 || (in->extra_isize & 3) ||
	    start + 4 + 4 > isize)
		return false;
	*off = start;
	*len = isize - start;
	return true;
}

void ino_xa_rgn_body(ino_xa_rgn *r, uint8_t *area, uint32_t len)
{
	*r = (ino_xa_rgn){.base = area + 4, .first = area + 4, .end = area + len};
}

void ino_xa_rgn_block(ino_xa_rgn *r, uint8_t *blk, uint32_t bs)
{
	*r = (ino_xa_rgn){.base = blk, .first = blk + INO_XA_HDR, .end = blk + bs};
}

bool ino_xa_header_ok(const struct ino_xa_header *h)
{
	return cm_le32(h->magic) == INO_XATTR_MAGIC && cm_le32(h->blocks) == 1 &&
	       cm_le32(h->refcount) != 0;
}

int ino_xa_load_body(ino_fs *fs, const ino_inode *in, bool empty, uint8_t **ret, ino_xa_rgn *r)
{
	uint32_t off, len, bs = fs->geom.block_size;
	uint64_t blk = ino_inode_blocknr(fs, in->ino);
	uint32_t group, index;
	const uint8_t *slot;
	char why[96];
	ino_buf b = {0};
	uint8_t *area;
	bool magic;
	int err;

	*ret = NULL;
	if (!ino_xa_ibody_span(fs, in, &off, &len))
		return 0;
	if (!blk || cm_ext3_inode_locate(&fs->geom, in->ino, &group, &index) < 0)
		return -EINVAL;
	err = ino_blk_get(fs, blk, &b);
	if (err < 0)
		return err;
	slot = b.data + ((uint64_t)index * fs->geom.inode_size) % bs + off;
	magic = cm_le32(*(const cm_le32_t *)slot) == INO_XATTR_MAGIC;
	/* Most inodes have none: no copy for a reader then. */
	area = magic || empty ? malloc(len) : NULL;
	if (area && magic)
		memcpy(area, slot, len);
	else if (area)
		memset(area, 0, len);
	ino_blk_put(fs, &b);
	if (!area)
		return magic || empty ? -ENOMEM : 0;
	ino_xa_rgn_body(r, area, len);
	err = ino_xa_check(r, why, sizeof(why));
	if (err < 0) {
		ino_xa_warn(in->ino, 0, why);
		free(area);
		return err;
	}
	*ret = area;
	return 0;
}

int ino_xa_load_block(ino_fs *fs, const ino_inode *in, uint8_t **ret, ino_xa_rgn *r)
{
	uint32_t bs = fs->geom.block_size;
	ino_buf b = {0};
	char why[96];
	uint8_t *blk;
	int err;

	*ret = NULL;
	if (in->file_acl == 0)
		return 0;
	if (!ino_blk_valid(fs, in->file_acl)) {
		ino_xa_warn(in->ino, in->file_acl, "i_file_acl outside the filesystem");
		return -EUCLEAN;
	}
	blk = malloc(bs);
	if (!blk)
		return -ENOMEM;
	err = ino_blk_get(fs, in->file_acl, &b);
	if (err < 0) {
		free(blk);
		return err;
	}
	memcpy(blk, b.data, bs);
	ino_blk_put(fs, &b);
	ino_xa_rgn_block(r, blk, bs);
	if (!ino_xa_header_ok((struct ino_xa_header *)blk)) {
		snprintf(why, sizeof(why), "bad header");
		err = -EUCLEAN;
	} else {
		err = ino_xa_check(r, why, sizeof(why));
	}
	if (err < 0) {
		ino_xa_warn(in->ino, in->file_acl, why);
		free(blk);
		return err;
	}
	*ret = blk;
	return 0;
}

/* Copies e's value (the region's) into buf as getxattr does. */
static ssize_t ino_xa_copy(const ino_xa_rgn *r, const struct ino_xa_entry *e, void *buf, size_t len)
{
	uint32_t vs = cm_le32(e->value_size);

	if (len == 0)
		return vs;
	if (len < vs)
		return -ERANGE;
	memcpy(buf, r->base + cm_le16(e->value_offs), vs);
	return vs;
}

ssize_t ino_xattr_get(ino_fs *fs, const ino_inode *in, int index, const char *name, size_t nlen,
		      void *buf, size_t len)
{
	struct ino_xa_entry *e;
	uint8_t *area;
	ino_xa_rgn r;
	ssize_t n = -ENODATA;
	int err;

	if (nlen > INO_XATTR_NAME_MAX)
		return -ERANGE;
	err = ino_xa_load_body(fs, in, false, &area, &r);
	if (err < 0)
		return err;
	if (area && ino_xa_find(&r, index, name, nlen, false, &e) == 0)
		n = ino_xa_copy(&r, e, buf, len);
	free(area);
	if (n != -ENODATA)
		return n;
	err = ino_xa_load_block(fs, in, &area, &r);
	if (err < 0)
		return err;
	if (area && ino_xa_find(&r, index, name, nlen, false, &e) == 0)
		n = ino_xa_copy(&r, e, buf, len);
	free(area);
	return n;
}

/* Calls fn for each entry of a checked region. */
static int ino_xa_each(const ino_xa_rgn *r, ino_xattr_fn *fn, void *ctx)
{
	for (uint8_t *p = r->first; p < r->last; p += INO_XA_LEN(p[0])) {
		struct ino_xa_entry *e = (struct ino_xa_entry *)p;
		int stop = fn(ctx, e->name_index, e->name, e->name_len, cm_le32(e->value_size));

		if (stop)
			return stop;
	}
	return 0;
}

int ino_xattr_iterate(ino_fs *fs, const ino_inode *in, ino_xattr_fn *fn, void *ctx)
{
	uint8_t *area;
	ino_xa_rgn r;
	int err = ino_xa_load_body(fs, in, false, &area, &r);

	if (err < 0)
		return err;
	if (area)
		err = ino_xa_each(&r, fn, ctx);
	free(area);
	if (err)
		return err;
	err = ino_xa_load_block(fs, in, &area, &r);
	if (err < 0)
		return err;
	if (area)
		err = ino_xa_each(&r, fn, ctx);
	free(area);
	return err;
}

struct ino_xa_list {
	bool trusted;
	char *buf;
	size_t len, used;
};

static int ino_xa_list_one(void *ctx, int index, const char *name, size_t nlen, uint32_t vsize)
{
	struct ino_xa_list *l = ctx;
	const char *prefix = NULL;
	size_t pl, total;

	(void)vsize;
	for (size_t i = 0; i < INO_XA_NPREFIX; i++)
		if (ino_xa_prefixes[i].index == index)
			prefix = ino_xa_prefixes[i].prefix;
	if (!prefix || (index == INO_XATTR_INDEX_TRUSTED && !l->trusted))
		return 0;
	if (index == INO_XATTR_INDEX_ACL_ACCESS || index == INO_XATTR_INDEX_ACL_DEFAULT)
		nlen = 0;
	pl = strlen(prefix);
	total = pl + nlen + 1;
	if (l->len && l->used + total <= l->len) {
		memcpy(l->buf + l->used, prefix, pl);
		memcpy(l->buf + l->used + pl, name, nlen);
		l->buf[l->used + pl + nlen] = '\0';
	}
	l->used += total;
	return 0;
}

ssize_t ino_xattr_list(ino_fs *fs, const ino_inode *in, bool trusted, char *buf, size_t len)
{
	struct ino_xa_list l = {.trusted = trusted, .buf = buf, .len = len};
	int err = ino_xattr_iterate(fs, in, ino_xa_list_one, &l);

	if (err < 0)
		return err;
	if (len && l.used > len)
		return -ERANGE;
	return (ssize_t)l.used;
}
