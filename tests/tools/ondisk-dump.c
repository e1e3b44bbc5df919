/*
 * ondisk-dump - print an ext3 image's superblock, group descriptors and
 * journal superblock, decoded by common/ondisk.c, in dumpe2fs's spelling.
 *
 * Test tool: tests/integration/ondisk.t compares its output with
 * dumpe2fs field by field.  Reads the image with pread only; a structure
 * that fails validation prints the reason to stderr and exits 1.
 */
#include "ondisk.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WHY_LEN	256

static void die(const char *what, const char *why)
{
	fprintf(stderr, "ondisk-dump: %s: %s\n", what, why);
	exit(EXIT_FAILURE);
}

static void read_at(int fd, void *buf, size_t len, uint64_t off,
		    const char *what)
{
	ssize_t n = pread(fd, buf, len, (off_t)off);

	if (n < 0)
		die(what, strerror(errno));
	if ((size_t)n != len)
		die(what, "short read");
}

static void print_uuid(const char *label, const uint8_t u[16])
{
	static const uint8_t zero[16];

	printf("%-26s", label);
	if (memcmp(u, zero, sizeof(zero)) == 0) {
		printf("<none>\n");
		return;
	}
	printf("%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
	       "%02x%02x%02x%02x%02x%02x\n", u[0], u[1], u[2], u[3], u[4],
	       u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
	       u[14], u[15]);
}

static void print_features(const struct ext3_super_block *sb)
{
	char buf[512] = "";
	unsigned n;

	n = cm_ext3_feature_names(CM_FEAT_COMPAT,
				  cm_le32(sb->s_feature_compat), buf,
				  sizeof(buf));
	n += cm_ext3_feature_names(CM_FEAT_INCOMPAT,
				   cm_le32(sb->s_feature_incompat), buf,
				   sizeof(buf));
	n += cm_ext3_feature_names(CM_FEAT_RO_COMPAT,
				   cm_le32(sb->s_feature_ro_compat), buf,
				   sizeof(buf));
	printf("Filesystem features:     %s\n", n ? buf : " (none)");
}

static void print_super(const struct ext3_super_block *sb,
			const cm_ext3_geom *g)
{
	printf("Inode count:              %u\n", g->inodes_count);
	printf("Block count:              %u\n", g->blocks_count);
	printf("Reserved block count:     %u\n", cm_le32(sb->s_r_blocks_count));
	printf("Free blocks:              %u\n",
	       cm_le32(sb->s_free_blocks_count));
	printf("Free inodes:              %u\n",
	       cm_le32(sb->s_free_inodes_count));
	printf("First block:              %u\n", g->first_data_block);
	printf("Block size:               %u\n", g->block_size);
	printf("Blocks per group:         %u\n", g->blocks_per_group);
	printf("Inodes per group:         %u\n", g->inodes_per_group);
	printf("Inode size:\t          %u\n", g->inode_size);
	printf("Filesystem magic number:  0x%04X\n", cm_le16(sb->s_magic));
	print_uuid("Filesystem UUID:", sb->s_uuid);
	print_features(sb);
	if (cm_le16(sb->s_reserved_gdt_blocks))
		printf("Reserved GDT blocks:      %u\n",
		       cm_le16(sb->s_reserved_gdt_blocks));
	if (cm_le32(sb->s_journal_inum))
		printf("Journal inode:            %u\n",
		       cm_le32(sb->s_journal_inum));
	if (sb->s_jnl_backup_type == EXT3_JNL_BACKUP_BLOCKS)
		printf("Journal backup:           inode blocks\n");
	else if (sb->s_jnl_backup_type)
		printf("Journal backup:           type %u\n",
		       sb->s_jnl_backup_type);
}

/* Reads, checks and prints the group descriptors; returns the table. */
static struct ext3_group_desc *dump_groups(int fd, const cm_ext3_geom *g)
{
	struct ext3_group_desc *gdt;
	char why[WHY_LEN];
	uint32_t i;

	gdt = calloc(g->group_count, sizeof(*gdt));
	if (!gdt)
		die("group descriptors", strerror(ENOMEM));
	read_at(fd, gdt, (size_t)g->group_count * sizeof(*gdt),
		(uint64_t)g->gdt_block * g->block_size, "group descriptors");
	for (i = 0; i < g->group_count; i++) {
		const struct ext3_group_desc *gd = &gdt[i];

		if (cm_ext3_group_desc_check(g, i, gd, why, sizeof(why)) < 0)
			die("group descriptor", why);
		printf("Group %u: block bitmap %u, inode bitmap %u, "
		       "inode table %u, free blocks %u, free inodes %u, "
		       "used dirs %u\n", i, cm_le32(gd->bg_block_bitmap),
		       cm_le32(gd->bg_inode_bitmap),
		       cm_le32(gd->bg_inode_table),
		       cm_le16(gd->bg_free_blocks_count),
		       cm_le16(gd->bg_free_inodes_count),
		       cm_le16(gd->bg_used_dirs_count));
	}
	return gdt;
}

static void print_journal(const journal_superblock_t *jsb)
{
	char buf[512] = "";
	unsigned n = 0;

	if (cm_be32(jsb->s_header.h_blocktype) == JBD2_SUPERBLOCK_V2) {
		n = cm_jbd2_feature_names(CM_FEAT_COMPAT,
					  cm_be32(jsb->s_feature_compat),
					  buf, sizeof(buf));
		n += cm_jbd2_feature_names(CM_FEAT_INCOMPAT,
					   cm_be32(jsb->s_feature_incompat),
					   buf, sizeof(buf));
		n += cm_jbd2_feature_names(CM_FEAT_RO_COMPAT,
					   cm_be32(jsb->s_feature_ro_compat),
					   buf, sizeof(buf));
	}
	printf("Journal features:        %s\n", n ? buf : " (none)");
	printf("Journal block size:       %u\n", cm_be32(jsb->s_blocksize));
	printf("Total journal blocks:     %u\n", cm_be32(jsb->s_maxlen));
	printf("Journal first block:      %u\n", cm_be32(jsb->s_first));
	printf("Journal sequence:         0x%08x\n",
	       cm_be32(jsb->s_sequence));
	printf("Journal start:            %u\n", cm_be32(jsb->s_start));
}

/* Finds the journal inode through the descriptors, checks, prints. */
static void dump_journal(int fd, const struct ext3_super_block *sb,
			 const cm_ext3_geom *g,
			 const struct ext3_group_desc *gdt)
{
	uint32_t ino = cm_le32(sb->s_journal_inum), group, index, blk;
	journal_superblock_t jsb;
	struct ext3_inode inode;
	char why[WHY_LEN];
	uint64_t off;

	if (cm_ext3_inode_locate(g, ino, &group, &index) < 0)
		die("journal inode", "inode number out of range");
	off = (uint64_t)cm_le32(gdt[group].bg_inode_table) * g->block_size +
	      (uint64_t)index * g->inode_size;
	read_at(fd, &inode, sizeof(inode), off, "journal inode");
	blk = cm_le32(inode.i_block[0]);
	if (blk == 0 || blk >= g->blocks_count)
		die("journal inode", "i_block[0] outside the filesystem");
	read_at(fd, &jsb, sizeof(jsb), (uint64_t)blk * g->block_size,
		"journal superblock");
	if (cm_ext3_journal_super_check(&jsb, g->block_size, why,
					sizeof(why)) < 0)
		die("journal superblock", why);
	print_journal(&jsb);
}

int main(int argc, char **argv)
{
	struct ext3_super_block sb;
	struct ext3_group_desc *gdt;
	char why[WHY_LEN];
	cm_ext3_geom g;
	off_t size;
	int fd;

	if (argc != 2) {
		fprintf(stderr, "usage: ondisk-dump IMAGE\n");
		return EXIT_FAILURE;
	}
	fd = open(argv[1], O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		die(argv[1], strerror(errno));
	size = lseek(fd, 0, SEEK_END);
	if (size < 0)
		die(argv[1], strerror(errno));
	read_at(fd, &sb, sizeof(sb), EXT3_SUPERBLOCK_OFFSET, "superblock");
	if (cm_ext3_super_check(&sb, (uint64_t)size, why, sizeof(why)) < 0)
		die("superblock", why);
	if (cm_ext3_features_unsupported(&sb, false, why, sizeof(why)) > 0)
		die("unsupported features", why + 1);
	cm_ext3_geom_from_super(&sb, &g);
	print_super(&sb, &g);
	gdt = dump_groups(fd, &g);
	if ((cm_le32(sb.s_feature_compat) & EXT3_FEATURE_COMPAT_HAS_JOURNAL) &&
	    cm_le32(sb.s_journal_inum) != 0)
		dump_journal(fd, &sb, &g, gdt);
	free(gdt);
	close(fd);
	return EXIT_SUCCESS;
}
