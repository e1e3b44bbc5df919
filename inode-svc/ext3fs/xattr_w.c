/*
 * xattr_w.c - changing extended attributes as ext3_xattr_set_handle does:
 * the inode's body first (256-byte inodes), the block when the value does
 * not fit there; an attribute that moves between the two leaves the other.
 * Both areas are changed as copies (ext3_xattr_set_entry's moves), then
 * stored: the body into the inode slot, the block in place when this inode
 * is its only user, else into a new block, the shared one losing a
 * reference (freed at zero). Block entries carry their hashes and the
 * header the block's hash (ext3_xattr_rehash).
 *
 * Lock: xa_ref_mtx (process-private, a leaf) makes reading and changing a
 * block's h_refcount atomic among inode-svc's threads: two inodes sharing a
 * block hold different inode locks.
 */
#include "internal_w.h"
#include "xattr_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

static pthread_mutex_t xa_ref_mtx = PTHREAD_MUTEX_INITIALIZER;

/* ext3_xattr_hash_entry */
static uint32_t ino_xa_hash_entry(const ino_xa_rgn *r, const struct ino_xa_entry *e)
{
	const uint8_t *name = (const uint8_t *)e->name;
	uint32_t hash = 0, vs = cm_le32(e->value_size);

	for (unsigned i = 0; i < e->name_len; i++)
		hash = (hash << 5) ^ (hash >> 27) ^ name[i];
	if (vs) {
		const cm_le32_t *v = (const cm_le32_t *)(r->base + cm_le16(e->value_offs));

		for (uint32_t n = INO_XA_SIZE(vs) / 4; n; n--)
			hash = (hash << 16) ^ (hash >> 16) ^ cm_le32(*v++);
	}
	return hash;
}

/* Every entry's hash, then the block's (ext3_xattr_rehash). */
static void ino_xa_rehash(ino_xa_rgn *r)
{
	struct ino_xa_header *h = (struct ino_xa_header *)r->base;
	uint32_t hash = 0;

	for (uint8_t *p = r->first; p < r->last; p += INO_XA_LEN(p[0])) {
		struct ino_xa_entry *e = (struct ino_xa_entry *)p;

		cm_set_le32(&e->hash, ino_xa_hash_entry(r, e));
	}
	for (uint8_t *p = r->first; p < r->last; p += INO_XA_LEN(p[0])) {
		uint32_t eh = cm_le32(((struct ino_xa_entry *)p)->hash);

		if (eh == 0) {
			hash = 0;
			break;
		}
		hash = (hash << 16) ^ (hash >> 16) ^ eh;
	}
	cm_set_le32(&h->hash, hash);
}

/* Takes the value of e out of r, closing the gap (ext3 keeps values packed
 * against the area's end). */
static void ino_xa_value_drop(ino_xa_rgn *r, struct ino_xa_entry *e)
{
	uint32_t offs = cm_le16(e->value_offs), size = INO_XA_SIZE(cm_le32(e->value_size));
	uint8_t *first_val = r->base + r->min_offs;

	memmove(first_val + size, first_val, (size_t)(r->base + offs - first_val));
	memset(first_val, 0, size);
	cm_set_le32(&e->value_size, 0);
	cm_set_le16(&e->value_offs, 0);
	r->min_offs += size;
	for (uint8_t *p = r->first; p < r->last; p += INO_XA_LEN(p[0])) {
		struct ino_xa_entry *o = (struct ino_xa_entry *)p;
		uint32_t oo = cm_le16(o->value_offs);

		if (cm_le32(o->value_size) && oo < offs)
			cm_set_le16(&o->value_offs, (uint16_t)(oo + size));
	}
}

/*
 * ext3_xattr_set_entry: sets the entry at here (found: it is the name's;
 * else where it goes) to val, or removes it when val is NULL. -ENOSPC,
 * before any change, when it does not fit.
 */
static int ino_xa_set_entry(ino_xa_rgn *r, struct ino_xa_entry *here, bool found, int index,
			    const char *name, size_t nlen, const void *val, size_t vlen)
{
	int64_t room = (int64_t)r->min_offs - (r->last - r->base) - 4;
	uint32_t size;

	if (found) {
		if (cm_le32(here->value_size))
			room += INO_XA_SIZE(cm_le32(here->value_size));
		room += INO_XA_LEN(nlen);
	}
	if (val && (room < INO_XA_SIZE(vlen) || room < INO_XA_LEN(nlen) + INO_XA_SIZE(vlen)))
		return -ENOSPC;
	if (val && !found) {
		size = INO_XA_LEN(nlen);
		memmove((uint8_t *)here + size, here, (size_t)(r->last - (uint8_t *)here) + 4);
		memset(here, 0, size);
		here->name_index = (uint8_t)index;
		here->name_len = (uint8_t)nlen;
		memcpy(here->name, name, nlen);
		r->last += size;
	} else if (found && cm_le32(here->value_size)) {
		size = INO_XA_SIZE(cm_le32(here->value_size));
		if (val && vlen && size == INO_XA_SIZE(vlen)) {
			uint8_t *v = r->base + cm_le16(here->value_offs);

			memset(v + size - 4, 0, 4);
			memcpy(v, val, vlen);
			cm_set_le32(&here->value_size, (uint32_t)vlen);
			return 0;
		}
		ino_xa_value_drop(r, here);
	}
	if (!val) {
		uint8_t *old_last = r->last;

		size = INO_XA_LEN(nlen);
		r->last -= size;
		memmove(here, (uint8_t *)here + size, (size_t)(r->last - (uint8_t *)here) + 4);
		memset(r->last + 4, 0, (size_t)(old_last - r->last));
		return 0;
	}
	cm_set_le32(&here->value_size, (uint32_t)vlen);
	if (vlen) {
		uint8_t *v;

		size = INO_XA_SIZE(vlen);
		r->min_offs -= size;
		v = r->base + r->min_offs;
		cm_set_le16(&here->value_offs, (uint16_t)r->min_offs);
		memset(v + size - 4, 0, 4);
		memcpy(v, val, vlen);
	}
	return 0;
}

/* Reads blk's h_refcount with write access and, with dec, takes one off
 * when others remain. *ret gets the count seen. Called with xa_ref_mtx
 * held. */
static int ino_xa_refs_locked(ino_fs *fs, ino_txn *t, const ino_inode *in, uint32_t blk, bool dec,
			      uint32_t *ret)
{
	struct ino_xa_header *h;
	ino_wbuf b = {0};
	int r = ino_txn_get_write(t, blk, &b);

	if (r < 0)
		return r;
	h = (struct ino_xa_header *)b.data;
	if (!ino_xa_header_ok(h)) {
		ino_txn_put(t, &b);
		ino_xa_warn(in->ino, blk, "bad header");
		return -EUCLEAN;
	}
	*ret = cm_le32(h->refcount);
	if (dec && *ret > 1) {
		cm_set_le32(&h->refcount, *ret - 1);
		r = ino_txn_dirty(t, &b);
	}
	ino_txn_put(t, &b);
	return r;
}

int ino_xattr_drop_block(ino_fs *fs, ino_txn *t, ino_inode *in)
{
	uint32_t blk = in->file_acl, refs = 0, n = fs->geom.block_size >> 9;
	ino_buf warm = {0};
	int r;

	if (blk == 0)
		return 0;
	if (!ino_blk_valid(fs, blk)) {
		ino_xa_warn(in->ino, blk, "i_file_acl outside the filesystem");
		return -EUCLEAN;
	}
	/* Read it before taking the lock, which no disk wait should hold. */
	r = ino_blk_get(fs, blk, &warm);
	if (r < 0)
		return r;
	ino_blk_put(fs, &warm);
	pthread_mutex_lock(&xa_ref_mtx);
	r = ino_xa_refs_locked(fs, t, in, blk, true, &refs);
	pthread_mutex_unlock(&xa_ref_mtx);
	/* The last user: nobody else can take a reference to it now. */
	if (r == 0 && refs == 1) {
		r = ino_txn_forget(t, blk, true);
		if (r == 0)
			r = ino_txn_free_blocks(t, blk, 1);
	}
	if (r < 0)
		return r;
	in->file_acl = 0;
	in->blocks512 = in->blocks512 > n ? in->blocks512 - n : 0;
	return 0;
}

/* Writes the changed block copy: in place when in is its only user, else
 * into a new block near the inode (the old one loses in's reference). */
static int ino_xa_store_block(ino_fs *fs, ino_txn *t, ino_inode *in, ino_xa_rgn *rg)
{
	uint32_t bs = fs->geom.block_size, old = in->file_acl, refs = 0;
	struct ino_xa_header *h = (struct ino_xa_header *)rg->base;
	uint64_t goal, nb;
	ino_wbuf b = {0};
	uint32_t got;
	int r;

	if (rg->first == rg->last)
		return ino_xattr_drop_block(fs, t, in);
	ino_xa_rehash(rg);
	cm_set_le32(&h->refcount, 1);
	if (old) {
		pthread_mutex_lock(&xa_ref_mtx);
		r = ino_xa_refs_locked(fs, t, in, old, false, &refs);
		if (r == 0 && refs == 1) {
			r = ino_txn_get_write(t, old, &b);
			if (r == 0) {
				memcpy(b.data, rg->base, bs);
				r = ino_txn_dirty(t, &b);
				ino_txn_put(t, &b);
			}
		}
		pthread_mutex_unlock(&xa_ref_mtx);
		if (r < 0 || refs == 1)
			return r;
	}
	goal = fs->geom.first_data_block +
	       (uint64_t)((in->ino - 1) / fs->geom.inodes_per_group) * fs->geom.blocks_per_group;
	r = ino_txn_alloc_blocks(t, goal, 1, &nb, &got);
	if (r < 0)
		return r;
	r = ino_txn_get_new(t, nb, &b);
	if (r == 0) {
		memcpy(b.data, rg->base, bs);
		r = ino_txn_dirty(t, &b);
		ino_txn_put(t, &b);
	}
	if (r < 0) {
		(void)ino_txn_free_blocks(t, nb, 1);
		return r;
	}
	if (old)
		r = ino_xattr_drop_block(fs, t, in);
	in->file_acl = (uint32_t)nb;
	in->blocks512 += bs >> 9;
	return r;
}

/* Writes the body area copy into in's slot, with the magic while it holds
 * entries (ext3_xattr_ibody_set). */
static int ino_xa_store_body(ino_fs *fs, ino_txn *t, const ino_inode *in, uint8_t *area,
			     const ino_xa_rgn *rg)
{
	struct ext3_inode *raw;
	ino_wbuf b = {0};
	uint32_t off, len;
	int r;

	if (!ino_xa_ibody_span(fs, in, &off, &len))
		return -EINVAL;
	cm_set_le32((cm_le32_t *)area, rg->first == rg->last ? 0 : INO_XATTR_MAGIC);
	r = ino_slot_get(fs, t, in->ino, &b, &raw);
	if (r < 0)
		return r;
	memcpy((uint8_t *)raw + off, area, len);
	r = ino_txn_dirty(t, &b);
	ino_txn_put(t, &b);
	return r;
}

/* The ext_attr feature, set on the first attribute as ext3 does. */
static int ino_xa_note_feature(ino_fs *fs, ino_txn *t)
{
	struct ext3_super_block *sb;
	ino_wbuf b = {0};
	int r;

	if (cm_le32(fs->sb.s_feature_compat) & EXT3_FEATURE_COMPAT_EXT_ATTR)
		return 0;
	r = ino_sb_get(fs, t, &b, &sb);
	if (r < 0)
		return r;
	if (!(cm_le32(sb->s_feature_compat) & EXT3_FEATURE_COMPAT_EXT_ATTR)) {
		cm_set_le32(&sb->s_feature_compat,
			    cm_le32(sb->s_feature_compat) | EXT3_FEATURE_COMPAT_EXT_ATTR);
		r = ino_txn_dirty(t, &b);
	}
	ino_txn_put(t, &b);
	return r;
}

/* A new, empty block copy. */
static uint8_t *ino_xa_block_new(uint32_t bs, ino_xa_rgn *r)
{
	uint8_t *blk = calloc(1, bs);
	struct ino_xa_header *h = (struct ino_xa_header *)blk;

	if (!blk)
		return NULL;
	cm_set_le32(&h->magic, INO_XATTR_MAGIC);
	cm_set_le32(&h->refcount, 1);
	cm_set_le32(&h->blocks, 1);
	ino_xa_rgn_block(r, blk, bs);
	r->last = r->first;
	r->min_offs = bs;
	return blk;
}

/* The changes to the two copies; *bd and *kd say which changed. */
static int ino_xa_change(ino_fs *fs, uint8_t *body, ino_xa_rgn *rb, uint8_t **blk, ino_xa_rgn *rk,
			 int index, const char *name, size_t nlen, const void *val, size_t vlen,
			 int flags, bool *bd, bool *kd)
{
	struct ino_xa_entry *eb = NULL, *ek = NULL;
	bool in_body = body && ino_xa_find(rb, index, name, nlen, false, &eb) == 0;
	bool in_blk = !in_body && *blk && ino_xa_find(rk, index, name, nlen, true, &ek) == 0;
	int r;

	if (!in_body && !in_blk) {
		if ((flags & INO_XATTR_REPLACE) || !val)
			return -ENODATA;
	} else if (flags & INO_XATTR_CREATE) {
		return -EEXIST;
	}
	if (!val) {
		if (in_body)
			*bd = true;
		else
			*kd = true;
		return in_body ? ino_xa_set_entry(rb, eb, true, index, name, nlen, NULL, 0)
			       : ino_xa_set_entry(rk, ek, true, index, name, nlen, NULL, 0);
	}
	r = body ? ino_xa_set_entry(rb, eb, in_body, index, name, nlen, val, vlen) : -ENOSPC;
	if (r == 0) {
		*bd = true;
		if (!in_blk)
			return 0;
		*kd = true;
		return ino_xa_set_entry(rk, ek, true, index, name, nlen, NULL, 0);
	}
	if (r != -ENOSPC)
		return r;
	if (!*blk) {
		*blk = ino_xa_block_new(fs->geom.block_size, rk);
		if (!*blk)
			return -ENOMEM;
	}
	if (!in_blk)
		(void)ino_xa_find(rk, index, name, nlen, true, &ek);
	r = ino_xa_set_entry(rk, ek, in_blk, index, name, nlen, val, vlen);
	if (r < 0)
		return r;
	*kd = true;
	if (!in_body)
		return 0;
	*bd = true;
	return ino_xa_set_entry(rb, eb, true, index, name, nlen, NULL, 0);
}

int ino_xattr_set(ino_fs *fs, ino_txn *t, ino_inode *in, int index, const char *name, size_t nlen,
		  const void *val, size_t vlen, int flags)
{
	uint8_t *body = NULL, *blk = NULL;
	bool bd = false, kd = false;
	ino_xa_rgn rb, rk;
	int r;

	if (nlen > INO_XATTR_NAME_MAX)
		return -ERANGE;
	if (val && vlen > INO_XATTR_SIZE_MAX)
		return -E2BIG;
	r = ino_xa_load_body(fs, in, true, &body, &rb);
	if (r == 0)
		r = ino_xa_load_block(fs, in, &blk, &rk);
	if (r == 0)
		r = ino_xa_change(fs, body, &rb, &blk, &rk, index, name, nlen, val, vlen, flags,
				  &bd, &kd);
	if (r == 0 && kd)
		r = ino_xa_store_block(fs, t, in, &rk);
	if (r == 0 && bd)
		r = ino_xa_store_body(fs, t, in, body, &rb);
	if (r == 0 && val)
		r = ino_xa_note_feature(fs, t);
	if (r == 0)
		r = ino_inode_write(fs, t, in);
	free(body);
	free(blk);
	return r;
}

int ino_acl_set(ino_fs *fs, ino_txn *t, ino_inode *in, int index, const ino_acl *a)
{
	uint8_t buf[4 + 8 * INO_ACL_MAX_ENTRIES];
	int r;

	if (!a || a->count == 0) {
		r = ino_xattr_set(fs, t, in, index, "", 0, NULL, 0, 0);
		return r == -ENODATA ? ino_inode_write(fs, t, in) : r;
	}
	return ino_xattr_set(fs, t, in, index, "", 0, buf, ino_acl_to_disk(a, buf), 0);
}
