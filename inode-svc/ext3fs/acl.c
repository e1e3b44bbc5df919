/*
 * acl.c - POSIX ACLs: the VFS's xattr format (posix_acl_xattr_header
 * version 2, 8-byte entries) and ext3's on-disk one (ext3_acl_header
 * version 1, 4-byte entries for USER_OBJ, GROUP_OBJ, MASK and OTHER, 8-byte
 * ones for USER and GROUP) both ways, and the kernel's rules on them:
 * posix_acl_valid, posix_acl_equiv_mode, posix_acl_create_masq,
 * __posix_acl_chmod. Pure functions but ino_acl_get, which reads an
 * inode's ACL through xattr.c (xattr_w.c stores one: ino_acl_set).
 */
#include "xattr.h"

#include <errno.h>
#include <string.h>

#define INO_ACL_XATTR_VERSION 2
#define INO_ACL_DISK_VERSION 1
#define INO_ACL_RWX 7u

/* Unaligned little-endian fields of a value buffer. */
static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)get16(p) | (uint32_t)get16(p + 2) << 16;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)v);
	put16(p + 2, (uint16_t)(v >> 16));
}

static bool ino_acl_has_id(uint16_t tag)
{
	return tag == INO_ACL_USER || tag == INO_ACL_GROUP;
}

int ino_acl_from_xattr(const void *v, size_t len, ino_acl *ret)
{
	const uint8_t *p = v;
	size_t count;

	if (len < 4)
		return -EINVAL;
	if (get32(p) != INO_ACL_XATTR_VERSION)
		return -EOPNOTSUPP;
	if ((len - 4) % 8)
		return -EINVAL;
	count = (len - 4) / 8;
	if (count > INO_ACL_MAX_ENTRIES)
		return -ENOSPC;
	ret->count = (uint32_t)count;
	for (size_t i = 0; i < count; i++) {
		const uint8_t *e = p + 4 + 8 * i;
		ino_acl_entry *x = &ret->e[i];

		x->tag = get16(e);
		x->perm = get16(e + 2);
		x->id = get32(e + 4);
		switch (x->tag) {
		case INO_ACL_USER_OBJ:
		case INO_ACL_GROUP_OBJ:
		case INO_ACL_MASK:
		case INO_ACL_OTHER:
			x->id = INO_ACL_UNDEFINED_ID;
			break;
		case INO_ACL_USER:
		case INO_ACL_GROUP:
			if (x->id == INO_ACL_UNDEFINED_ID)
				return -EINVAL;
			break;
		default:
			return -EINVAL;
		}
	}
	return 0;
}

ssize_t ino_acl_to_xattr(const ino_acl *a, void *buf, size_t len)
{
	size_t need = 4 + 8 * (size_t)a->count;
	uint8_t *p = buf;

	if (len == 0)
		return (ssize_t)need;
	if (len < need)
		return -ERANGE;
	put32(p, INO_ACL_XATTR_VERSION);
	for (uint32_t i = 0; i < a->count; i++) {
		uint8_t *e = p + 4 + 8 * i;

		put16(e, a->e[i].tag);
		put16(e + 2, a->e[i].perm);
		put32(e + 4, ino_acl_has_id(a->e[i].tag) ? a->e[i].id : INO_ACL_UNDEFINED_ID);
	}
	return (ssize_t)need;
}

int ino_acl_from_disk(const void *v, size_t len, ino_acl *ret)
{
	const uint8_t *p = v, *end = p + len;

	if (len < 4 || get32(p) != INO_ACL_DISK_VERSION)
		return -EINVAL;
	p += 4;
	ret->count = 0;
	while (p < end) {
		ino_acl_entry *x = &ret->e[ret->count];

		if (ret->count == INO_ACL_MAX_ENTRIES || end - p < 4)
			return -EINVAL;
		x->tag = get16(p);
		x->perm = get16(p + 2);
		x->id = INO_ACL_UNDEFINED_ID;
		switch (x->tag) {
		case INO_ACL_USER_OBJ:
		case INO_ACL_GROUP_OBJ:
		case INO_ACL_MASK:
		case INO_ACL_OTHER:
			p += 4;
			break;
		case INO_ACL_USER:
		case INO_ACL_GROUP:
			if (end - p < 8)
				return -EINVAL;
			x->id = get32(p + 4);
			p += 8;
			break;
		default:
			return -EINVAL;
		}
		ret->count++;
	}
	return 0;
}

size_t ino_acl_to_disk(const ino_acl *a, void *buf)
{
	uint8_t *p = buf;
	size_t n = 4;

	put32(p, INO_ACL_DISK_VERSION);
	for (uint32_t i = 0; i < a->count; i++) {
		put16(p + n, a->e[i].tag);
		put16(p + n + 2, a->e[i].perm);
		if (ino_acl_has_id(a->e[i].tag)) {
			put32(p + n + 4, a->e[i].id);
			n += 8;
		} else {
			n += 4;
		}
	}
	return n;
}

int ino_acl_valid(const ino_acl *a)
{
	unsigned state = INO_ACL_USER_OBJ;
	bool needs_mask = false;

	for (uint32_t i = 0; i < a->count; i++) {
		const ino_acl_entry *x = &a->e[i];

		if (x->perm & ~INO_ACL_RWX)
			return -EINVAL;
		switch (x->tag) {
		case INO_ACL_USER_OBJ:
			if (state != INO_ACL_USER_OBJ)
				return -EINVAL;
			state = INO_ACL_USER;
			break;
		case INO_ACL_USER:
			if (state != INO_ACL_USER)
				return -EINVAL;
			needs_mask = true;
			break;
		case INO_ACL_GROUP_OBJ:
			if (state != INO_ACL_USER)
				return -EINVAL;
			state = INO_ACL_GROUP;
			break;
		case INO_ACL_GROUP:
			if (state != INO_ACL_GROUP)
				return -EINVAL;
			needs_mask = true;
			break;
		case INO_ACL_MASK:
			if (state != INO_ACL_GROUP)
				return -EINVAL;
			state = INO_ACL_OTHER;
			break;
		case INO_ACL_OTHER:
			if (state != INO_ACL_OTHER && (state != INO_ACL_GROUP || needs_mask))
				return -EINVAL;
			state = 0;
			break;
		default:
			return -EINVAL;
		}
	}
	return state == 0 ? 0 : -EINVAL;
}

int ino_acl_equiv_mode(const ino_acl *a, uint16_t *mode)
{
	uint16_t m = 0;
	int not_equiv = 0;

	for (uint32_t i = 0; i < a->count; i++) {
		uint16_t perm = a->e[i].perm & INO_ACL_RWX;

		switch (a->e[i].tag) {
		case INO_ACL_USER_OBJ:
			m |= perm << 6;
			break;
		case INO_ACL_GROUP_OBJ:
			m |= perm << 3;
			break;
		case INO_ACL_OTHER:
			m |= perm;
			break;
		case INO_ACL_MASK:
			m = (uint16_t)((m & ~070u) | perm << 3);
			not_equiv = 1;
			break;
		default:
			not_equiv = 1;
			break;
		}
	}
	*mode = (uint16_t)((*mode & ~0777u) | m);
	return not_equiv;
}

int ino_acl_create_masq(ino_acl *a, uint16_t *mode)
{
	ino_acl_entry *group_obj = NULL, *mask_obj = NULL;
	unsigned m = *mode;
	int not_equiv = 0;

	for (uint32_t i = 0; i < a->count; i++) {
		ino_acl_entry *x = &a->e[i];

		switch (x->tag) {
		case INO_ACL_USER_OBJ:
			x->perm &= (uint16_t)((m >> 6) | ~INO_ACL_RWX);
			m &= (unsigned)(x->perm << 6) | ~0700u;
			break;
		case INO_ACL_USER:
		case INO_ACL_GROUP:
			not_equiv = 1;
			break;
		case INO_ACL_GROUP_OBJ:
			group_obj = x;
			break;
		case INO_ACL_OTHER:
			x->perm &= (uint16_t)(m | ~INO_ACL_RWX);
			m &= x->perm | ~0007u;
			break;
		case INO_ACL_MASK:
			mask_obj = x;
			not_equiv = 1;
			break;
		default:
			return -EIO;
		}
	}
	if (mask_obj)
		group_obj = mask_obj;
	if (!group_obj)
		return -EIO;
	group_obj->perm &= (uint16_t)((m >> 3) | ~INO_ACL_RWX);
	m &= (unsigned)(group_obj->perm << 3) | ~0070u;
	*mode = (uint16_t)((*mode & ~0777u) | (m & 0777u));
	return not_equiv;
}

void ino_acl_chmod(ino_acl *a, uint16_t mode)
{
	ino_acl_entry *group_obj = NULL, *mask_obj = NULL;

	for (uint32_t i = 0; i < a->count; i++) {
		ino_acl_entry *x = &a->e[i];

		if (x->tag == INO_ACL_USER_OBJ)
			x->perm = (mode >> 6) & INO_ACL_RWX;
		else if (x->tag == INO_ACL_GROUP_OBJ)
			group_obj = x;
		else if (x->tag == INO_ACL_MASK)
			mask_obj = x;
		else if (x->tag == INO_ACL_OTHER)
			x->perm = mode & INO_ACL_RWX;
	}
	if (mask_obj)
		group_obj = mask_obj;
	if (group_obj)
		group_obj->perm = (mode >> 3) & INO_ACL_RWX;
}

int ino_acl_get(ino_fs *fs, const ino_inode *in, int index, ino_acl *ret)
{
	uint8_t buf[4 + 8 * INO_ACL_MAX_ENTRIES];
	ssize_t n = ino_xattr_get(fs, in, index, "", 0, buf, sizeof(buf));

	ret->count = 0;
	if (n == -ENODATA)
		return 0;
	if (n == -ERANGE)
		return -EUCLEAN;
	if (n < 0)
		return (int)n;
	return ino_acl_from_disk(buf, (size_t)n, ret) < 0 ? -EUCLEAN : 0;
}
