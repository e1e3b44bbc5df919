/*
 * htree_w.c - adding entries to a dir_index (htree) directory, as ext3's
 * ext3_dx_add_entry, do_split and make_indexed_dir: the name goes into the
 * leaf dx_probe (htree.c) finds; a full leaf is split by hash (the upper
 * half by size moves to a new block, its first hash goes into the index,
 * with the collision bit when the split falls inside a run of one hash);
 * a full index node is split in two under the root, a full root gets a
 * level of nodes below it (ext3 stops at one), and a full tree is -ENOSPC.
 *
 * Every block the add changes is held and every new block allocated
 * before the first change, so a failure (no space, no memory, an I/O
 * error) leaves the directory as it was.
 */
#include "internal_w.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

/* An index block held for change on the add's path. */
struct wframe {
	ino_wbuf b;
	struct ext3_dx_entry *entries;	/* into b.data; [0] holds count/limit */
	uint32_t at;			/* entry followed */
};

/* One in-use entry of a leaf being split (ext3's dx_map_entry). */
struct map_ent {
	uint32_t hash;
	uint32_t off;
	uint32_t size;			/* rec_len */
};

/* A leaf's map: its entries by hash. */
struct leaf_map {
	struct map_ent *e;
	uint32_t n;
};

static uint32_t dx_count(const struct ext3_dx_entry *e)
{
	return cm_le16(((const struct ext3_dx_countlimit *)e)->count);
}

static void dx_set_count(struct ext3_dx_entry *e, uint32_t n)
{
	cm_set_le16(&((struct ext3_dx_countlimit *)e)->count, (uint16_t)n);
}

static void dx_set_limit(struct ext3_dx_entry *e, uint32_t n)
{
	cm_set_le16(&((struct ext3_dx_countlimit *)e)->limit, (uint16_t)n);
}

/* dx_insert_block: a new entry (hash, block) after the one followed. */
static void dx_insert(struct wframe *f, uint32_t hash, uint32_t block)
{
	uint32_t count = dx_count(f->entries);
	struct ext3_dx_entry *e = &f->entries[f->at + 1];

	memmove(e + 1, e, (count - f->at - 1) * sizeof(*e));
	cm_set_le32(&e->hash, hash);
	cm_set_le32(&e->block, block);
	dx_set_count(f->entries, count + 1);
}

static int map_cmp(const void *a, const void *b)
{
	const struct map_ent *x = a, *y = b;

	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

/* Sorts a leaf's map by map_cmp: an insertion sort, not qsort(), which
 * calls sysinfo() for arrays past 1 KiB, and inode-svc's sandbox kills a
 * service making that call (a leaf holds a few hundred entries). */
static void map_sort(struct map_ent *e, uint32_t n)
{
	for (uint32_t i = 1; i < n; i++) {
		struct map_ent x = e[i];
		uint32_t j = i;
		for (; j > 0 && map_cmp(&e[j - 1], &x) > 0; j--)
			e[j] = e[j - 1];
		e[j] = x;
	}
}

/* dx_make_map: hashes every in-use entry of a leaf, sorted by hash. */
static int map_build(const ino_fs *fs, const ino_inode *dir, unsigned version,
		     const ino_wbuf *leaf, struct leaf_map *m)
{
	uint32_t bs = fs->geom.block_size, off;
	char why[128];
	ino_dirent de;

	m->n = 0;
	m->e = malloc((bs / EXT3_DIR_REC_LEN(1) + 1) * sizeof(*m->e));
	if (!m->e)
		return -ENOMEM;
	for (off = 0; off < bs; off += de.rec_len) {
		if (ino_dirent_parse(fs, leaf->data, off, &de, why, sizeof(why)) < 0) {
			ino_dir_warn(dir, leaf->blocknr, why);
			return -EUCLEAN;
		}
		if (!de.ino)
			continue;
		m->e[m->n].off = off;
		m->e[m->n].size = de.rec_len;
		(void)ino_hash(version, fs->hash_seed, de.name, de.name_len, &m->e[m->n].hash,
			       NULL);
		m->n++;
	}
	/* a full block holds at least two entries (names are at most 255) */
	if (m->n < 2)
		return -ENOSPC;
	map_sort(m->e, m->n);
	return 0;
}

static uint32_t de_len(const uint8_t *block, uint32_t off)
{
	return EXT3_DIR_REC_LEN(((const struct ext3_dir_entry_2 *)(block + off))->name_len);
}

static void de_set_rec_len(uint8_t *block, uint32_t off, uint32_t len)
{
	cm_set_le16(&((struct ext3_dir_entry_2 *)(block + off))->rec_len,
		    ino_rec_len_encode(len));
}

/* dx_pack_dirents: the in-use entries of block moved to its front, the
 * last one reaching the end. */
static void pack(uint32_t bs, uint8_t *block)
{
	uint32_t off, next, to = 0, last = 0, len;
	struct ext3_dir_entry_2 *de;

	for (off = 0; off < bs; off = next) {
		de = (struct ext3_dir_entry_2 *)(block + off);
		next = off + ino_rec_len_decode(cm_le16(de->rec_len), bs);
		if (!cm_le32(de->inode) || !de->name_len)
			continue;
		len = de_len(block, off);
		memmove(block + to, de, len);
		de_set_rec_len(block, to, len);
		last = to;
		to += len;
	}
	de_set_rec_len(block, last, bs - last);
}

/*
 * do_split: moves the upper half (by size) of the full leaf d1's entries,
 * in hash order, into the empty block d2, points the index (f, after the
 * entry followed) at d2 by the first hash moved, and returns the block the
 * new name's hash belongs to.
 */
static uint8_t *split(uint32_t bs, const struct leaf_map *m, uint8_t *d1, uint8_t *d2,
		      uint32_t lblk2, struct wframe *f, uint32_t hash)
{
	uint32_t size = 0, move = 0, splitat, hash2, to = 0, last = 0, len, i;
	bool continued;

	for (i = m->n; i-- > 0;) {
		/* more than half of this entry in the upper half? */
		if (size + m->e[i].size / 2 > bs / 2)
			break;
		size += m->e[i].size;
		move++;
	}
	splitat = m->n - move;
	if (splitat == 0)
		splitat = 1;
	hash2 = m->e[splitat].hash;
	continued = hash2 == m->e[splitat - 1].hash;
	for (i = splitat; i < m->n; i++) {
		len = de_len(d1, m->e[i].off);
		memcpy(d2 + to, d1 + m->e[i].off, len);
		de_set_rec_len(d2, to, len);
		cm_set_le32(&((struct ext3_dir_entry_2 *)(d1 + m->e[i].off))->inode, 0);
		last = to;
		to += len;
	}
	de_set_rec_len(d2, last, bs - last);
	pack(bs, d1);
	dx_insert(f, hash2 + continued, lblk2);
	return hash >= hash2 ? d2 : d1;
}

/* Puts name into a block that has room for it (after a split). */
static int add_to(const ino_fs *fs, const ino_inode *dir, uint8_t *block, uint64_t blocknr,
		  const char *name, size_t namelen, uint32_t ino, uint8_t ftype)
{
	char why[128];
	uint32_t off;
	int r = ino_dirent_room(fs, block, name, namelen, &off, why, sizeof(why));

	if (r == 0)
		return -ENOSPC;
	if (r < 0) {
		if (r == -EUCLEAN)
			ino_dir_warn(dir, blocknr, why);
		return r;
	}
	return ino_dirent_fill(fs, block, off, name, namelen, ino, ftype);
}

/* Files and gives back every block held; the first error. */
static int done(ino_txn *t, ino_wbuf **bufs, unsigned n, int r)
{
	unsigned i;
	int d;

	for (i = 0; i < n; i++) {
		if (r == 0 && bufs[i]->data) {
			d = ino_txn_dirty(t, bufs[i]);
			if (d < 0)
				r = d;
		}
		ino_txn_put(t, bufs[i]);
	}
	return r;
}

/* The blocks of one split, held for change. */
struct split_bufs {
	struct wframe wf[INO_DX_MAX_LEVELS];
	ino_wbuf leaf, leaf2, node;
	uint32_t lblk2, node_lblk;
};

/* Holds the leaf and the index blocks a split changes; the root too when
 * the last level is full (grow). */
static int hold(ino_fs *fs, ino_txn *t, const ino_dx_path *p, uint64_t leaf_pblk, bool grow,
		struct split_bufs *s)
{
	unsigned last = p->levels - 1, i;
	int r = ino_txn_get_write(t, leaf_pblk, &s->leaf);

	for (i = grow ? 0 : last; r == 0 && i <= last; i++) {
		r = ino_txn_get_write(t, p->frames[i].b.blocknr, &s->wf[i].b);
		if (r < 0)
			break;
		s->wf[i].entries = (struct ext3_dx_entry *)(s->wf[i].b.data + p->frames[i].off);
		s->wf[i].at = p->frames[i].at;
	}
	return r;
}

/*
 * Makes room in the last index level (ext3_dx_add_entry): a full node is
 * split in two under the root; a full root's entries move to a new node
 * below it.  Returns the levels the tree has now.
 */
static unsigned grow_index(const ino_fs *fs, unsigned levels, struct split_bufs *s)
{
	struct ext3_dx_entry *e2 = (struct ext3_dx_entry *)(s->node.data +
							    offsetof(struct ext3_dx_node, entries));
	struct ext3_dx_entry *e1 = s->wf[levels - 1].entries;
	uint32_t n = dx_count(e1), n1 = n / 2, hash2;
	ino_wbuf tmp;

	if (levels == 2) {
		hash2 = cm_le32(e1[n1].hash);
		memcpy(e2, e1 + n1, (n - n1) * sizeof(*e2));
		dx_set_count(e2, n - n1);
		dx_set_limit(e2, ino_dx_node_limit(fs));
		dx_set_count(e1, n1);
		if (s->wf[1].at >= n1) {
			tmp = s->wf[1].b;
			s->wf[1].b = s->node;
			s->node = tmp;
			s->wf[1].entries = e2;
			s->wf[1].at -= n1;
		}
		dx_insert(&s->wf[0], hash2, s->node_lblk);
		return 2;
	}
	memcpy(e2, e1, n * sizeof(*e2));
	dx_set_limit(e2, ino_dx_node_limit(fs));
	dx_set_count(e1, 1);
	cm_set_le32(&e1[0].block, s->node_lblk);
	((struct ext3_dx_root *)s->wf[0].b.data)->info.indirect_levels = 1;
	s->wf[1] = (struct wframe){ .b = s->node, .entries = e2, .at = s->wf[0].at };
	s->wf[0].at = 0;
	s->node = (ino_wbuf){ 0 };
	return 2;
}

/* The leaf at leaf_pblk is full: split it (growing the index first if
 * its last level is full) and add name to the half it belongs in. */
static int split_add(ino_fs *fs, ino_txn *t, ino_inode *dir, const ino_dx_path *p,
		     uint64_t leaf_pblk, const char *name, size_t namelen, uint32_t ino,
		     uint8_t ftype)
{
	struct split_bufs s = { 0 };
	ino_wbuf *bufs[] = { &s.leaf, &s.leaf2, &s.node, &s.wf[0].b, &s.wf[1].b };
	const ino_dx_frame *lf = &p->frames[p->levels - 1];
	uint64_t first = dir->size / fs->geom.block_size;
	bool grow = lf->count >= lf->limit;
	struct leaf_map m = { 0 };
	unsigned levels = p->levels;
	uint8_t *target;
	int r;

	if (grow && p->levels == INO_DX_MAX_LEVELS &&
	    p->frames[0].count >= p->frames[0].limit) {
		cm_warn("directory index full ino=%u", dir->ino);
		return -ENOSPC;
	}
	/* index entries hold 24-bit block numbers */
	if (first + grow > 0x00ffffff)
		return -ENOSPC;
	r = hold(fs, t, p, leaf_pblk, grow, &s);
	if (r == 0)
		r = map_build(fs, dir, p->version, &s.leaf, &m);
	if (r == 0 && grow)
		r = ino_dir_append(fs, t, dir, &s.node_lblk, &s.node);
	if (r == 0)
		r = ino_dir_append(fs, t, dir, &s.lblk2, &s.leaf2);
	if (r < 0) {
		free(m.e);
		r = done(t, bufs, sizeof(bufs) / sizeof(bufs[0]), r);
		if (dir->size / fs->geom.block_size > first)
			(void)ino_dir_unappend(fs, t, dir, first);
		return r;
	}
	if (grow)
		levels = grow_index(fs, levels, &s);
	target = split(fs->geom.block_size, &m, s.leaf.data, s.leaf2.data, s.lblk2,
		       &s.wf[levels - 1], p->hash);
	free(m.e);
	r = add_to(fs, dir, target, target == s.leaf.data ? s.leaf.blocknr : s.leaf2.blocknr,
		   name, namelen, ino, ftype);
	return done(t, bufs, sizeof(bufs) / sizeof(bufs[0]), r);
}

int ino_dx_add(ino_fs *fs, ino_txn *t, ino_inode *dir, const char *name, size_t namelen,
	       uint32_t ino, uint8_t ftype)
{
	ino_wbuf b = { 0 };
	ino_buf rb = { 0 };
	uint32_t leaf, off;
	ino_dx_bad bad;
	ino_dx_path p;
	char why[128];
	uint64_t pblk;
	int r = ino_dx_probe(fs, dir, name, namelen, &p, &bad);

	if (r == 0)
		r = ino_dx_leaf(&p, &leaf, &bad);
	if (r == INO_BAD_DX)
		cm_warn("corrupt htree ino=%u blk=%llu: %s; clearing the index", dir->ino,
			(unsigned long long)bad.blk, bad.why);
	if (r == 0)
		r = ino_dir_block_get(fs, dir, leaf, &rb);
	if (r != 0)
		goto out;
	pblk = rb.blocknr;
	r = ino_dirent_room(fs, rb.data, name, namelen, &off, why, sizeof(why));
	ino_blk_put(fs, &rb);
	if (r == -EUCLEAN)
		ino_dir_warn(dir, pblk, why);
	if (r == 0) {
		r = split_add(fs, t, dir, &p, pblk, name, namelen, ino, ftype);
	} else if (r > 0) {
		r = ino_txn_get_write(t, pblk, &b);
		if (r == 0)
			r = ino_dirent_fill(fs, b.data, off, name, namelen, ino, ftype);
		if (r == 0)
			r = ino_txn_dirty(t, &b);
		ino_txn_put(t, &b);
	}
out:
	ino_dx_put(fs, &p);
	return r;
}

/* Block 0 of a linear directory as make_indexed_dir wants it: "." of 12
 * bytes, "..", then entries.  *ret_off: the first entry after "..". */
static bool root_shaped(ino_fs *fs, uint64_t pblk0, uint32_t *ret_off)
{
	uint32_t bs = fs->geom.block_size;
	ino_dirent dot, dotdot;
	ino_buf b = { 0 };
	char why[128];
	bool ok;

	if (ino_blk_get(fs, pblk0, &b) < 0)
		return false;
	ok = ino_dirent_parse(fs, b.data, 0, &dot, why, sizeof(why)) == 0 &&
	     dot.rec_len == EXT3_DIR_REC_LEN(1) && dot.name_len == 1 && dot.name[0] == '.' &&
	     ino_dirent_parse(fs, b.data, dot.rec_len, &dotdot, why, sizeof(why)) == 0 &&
	     dotdot.name_len == 2 && memcmp(dotdot.name, "..", 2) == 0 &&
	     dot.rec_len + dotdot.rec_len < bs;
	if (ok)
		*ret_off = dot.rec_len + dotdot.rec_len;
	ino_blk_put(fs, &b);
	return ok;
}

/* make_indexed_dir's root: ".." covers the block, the info, one entry
 * pointing at block 1. */
static void root_init(const ino_fs *fs, uint8_t *b0, unsigned def_version)
{
	struct ext3_dx_root *root = (struct ext3_dx_root *)b0;
	uint32_t bs = fs->geom.block_size;

	cm_set_le16(&root->dotdot.rec_len, ino_rec_len_encode(bs - EXT3_DIR_REC_LEN(1)));
	memset(&root->info, 0, bs - offsetof(struct ext3_dx_root, info));
	root->info.info_length = sizeof(root->info);
	root->info.hash_version = (uint8_t)def_version;
	dx_set_limit(root->entries, ino_dx_root_limit(fs));
	dx_set_count(root->entries, 1);
	cm_set_le32(&root->entries[0].block, 1);
}

/* Moves block 0's entries after ".." (from off) to the front of b1, the
 * last one reaching the end. */
static int move_out(const ino_fs *fs, const ino_inode *dir, const ino_wbuf *b0, uint32_t off,
		    uint8_t *b1)
{
	uint32_t bs = fs->geom.block_size, o, len = bs - off;
	char why[128];
	ino_dirent de;

	memcpy(b1, b0->data + off, len);
	for (o = 0;; o += de.rec_len) {
		if (ino_dirent_parse(fs, b1, o, &de, why, sizeof(why)) < 0) {
			ino_dir_warn(dir, b0->blocknr, why);
			return -EUCLEAN;
		}
		if (o + de.rec_len >= len)
			break;
	}
	de_set_rec_len(b1, o, bs - o);
	return 0;
}

int ino_dx_make(ino_fs *fs, ino_txn *t, ino_inode *dir, uint64_t pblk0, const char *name,
		size_t namelen, uint32_t ino, uint8_t ftype)
{
	unsigned def = fs->sb.s_def_hash_version, version;
	ino_wbuf b0 = { 0 }, b1 = { 0 }, b2 = { 0 };
	ino_wbuf *bufs[] = { &b0, &b1, &b2 };
	struct leaf_map m = { 0 };
	struct wframe root;
	uint32_t off, l1, l2, hash;
	uint8_t *target;
	int r;

	if (def > EXT3_DX_HASH_TEA || dir->size != fs->geom.block_size ||
	    !root_shaped(fs, pblk0, &off))
		return 1;
	version = def + (fs->hash_unsigned ? EXT3_DX_HASH_LEGACY_UNSIGNED : 0);
	(void)ino_hash(version, fs->hash_seed, name, namelen, &hash, NULL);
	r = ino_txn_get_write(t, pblk0, &b0);
	if (r == 0)
		r = ino_dir_append(fs, t, dir, &l1, &b1);
	if (r == 0)
		r = ino_dir_append(fs, t, dir, &l2, &b2);
	if (r == 0)
		r = move_out(fs, dir, &b0, off, b1.data);
	if (r == 0)
		r = map_build(fs, dir, version, &b1, &m);
	if (r < 0) {
		free(m.e);
		r = done(t, bufs, 3, r);
		if (dir->size > fs->geom.block_size)
			(void)ino_dir_unappend(fs, t, dir, 1);
		return r;
	}
	root_init(fs, b0.data, def);
	dir->flags |= EXT3_INDEX_FL;
	root = (struct wframe){ .b = b0, .at = 0,
				.entries = ((struct ext3_dx_root *)b0.data)->entries };
	target = split(fs->geom.block_size, &m, b1.data, b2.data, l2, &root, hash);
	free(m.e);
	r = add_to(fs, dir, target, target == b1.data ? b1.blocknr : b2.blocknr, name, namelen,
		   ino, ftype);
	return done(t, bufs, 3, r);
}
