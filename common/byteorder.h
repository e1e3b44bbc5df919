/*
 * byteorder.h - byte-order accessors for on-disk fields.
 *
 * On-disk structs (ext3_disk.h little-endian, jbd2_disk.h big-endian) keep
 * raw fields as plain uintN_t; these accessors convert them to and from
 * host order.  cm_le32(sb->s_blocks_count) reads a field,
 * cm_set_le32(&sb->s_free_blocks_count, n) writes one.
 */
#ifndef CM_BYTEORDER_H
#define CM_BYTEORDER_H

#include <endian.h>
#include <stdint.h>

/* Field types named by their stored byte order (plain integers). */
typedef uint16_t cm_le16_t;
typedef uint32_t cm_le32_t;
typedef uint64_t cm_le64_t;
typedef uint16_t cm_be16_t;
typedef uint32_t cm_be32_t;
typedef uint64_t cm_be64_t;

static inline uint16_t cm_le16(cm_le16_t x) { return le16toh(x); }
static inline uint32_t cm_le32(cm_le32_t x) { return le32toh(x); }
static inline uint64_t cm_le64(cm_le64_t x) { return le64toh(x); }
static inline uint16_t cm_be16(cm_be16_t x) { return be16toh(x); }
static inline uint32_t cm_be32(cm_be32_t x) { return be32toh(x); }
static inline uint64_t cm_be64(cm_be64_t x) { return be64toh(x); }

static inline void cm_set_le16(cm_le16_t *f, uint16_t v) { *f = htole16(v); }
static inline void cm_set_le32(cm_le32_t *f, uint32_t v) { *f = htole32(v); }
static inline void cm_set_le64(cm_le64_t *f, uint64_t v) { *f = htole64(v); }
static inline void cm_set_be16(cm_be16_t *f, uint16_t v) { *f = htobe16(v); }
static inline void cm_set_be32(cm_be32_t *f, uint32_t v) { *f = htobe32(v); }
static inline void cm_set_be64(cm_be64_t *f, uint64_t v) { *f = htobe64(v); }

#endif /* CM_BYTEORDER_H */
