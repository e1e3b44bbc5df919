/* wops - runs write operations by inode number through libext3d, one per
 * line of stdin, and prints one line for each: "ok" with what it returned,
 * or the errno's name. The shell tests (writeops.t) run scripts of it as
 * root and as other uids (setpriv) and compare the lines. Paths are
 * absolute, resolved by lookups from the root without following symlinks;
 * every lookup is a grant, so the session holds what it named until it
 * detaches or says "forget PATH" (the kernel's open file).
 *
 *   mknod PATH MODE [RDEV]     MODE in octal, with the type (0100644...)
 *   mkdir PATH MODE            MODE in octal, the permission bits
 *   symlink TARGET PATH        link OLD NEW        unlink PATH   rmdir PATH
 *   rename OLD NEW [noreplace] [exchange]
 *   fallocate PATH MODE OFF LEN    MODE as fallocate(2)'s (3: punch a hole)
 *   actas UID GID [GROUP...]   the next calls act as that user (off: not)
 *   write PATH OFF TEXT [append] [sync]     fill PATH OFF LEN SEED [sync]
 *   read PATH OFF LEN          prints the bytes' crc (cksum's) and count
 *   cat PATH OFF LEN           prints the bytes as text
 *   hold PATH                  prints "ino:N", which names it later
 *   setattr PATH FIELD=VALUE...  mode=OCT uid= gid= size= atime=S.NS
 *                                mtime=S.NS atime=now mtime=now
 *   readlink PATH
 *   pmknod PATH MODE [RDEV]    plink OLD NEW   the path calls (ext3d_mknod,
 *                              ext3d_link), symlinks followed
 *   stat PATH     times PATH     fsync PATH [data]     sync     statfs
 *   forget PATH                gives back every grant of the inode
 *   sleep MS
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ext3d.h"

#define WO_ARGS 8

static ext3d *wo_fs;

static const char *wo_err(int r)
{
	const char *n = strerrorname_np(-r);

	return n ? n : "E?";
}

/* The inode of path: "ino:N" or a path looked up from the root. */
static int wo_ino(const char *path, uint64_t *ret)
{
	char buf[4096], *save = NULL, *comp;
	uint64_t ino = EXT3D_ROOT_INO;
	ext3d_attr a;
	int r;

	if (strncmp(path, "ino:", 4) == 0) {
		*ret = strtoull(path + 4, NULL, 10);
		return 0;
	}
	snprintf(buf, sizeof(buf), "%s", path);
	for (comp = strtok_r(buf, "/", &save); comp; comp = strtok_r(NULL, "/", &save)) {
		r = ext3d_lookup(wo_fs, ino, comp, &a);
		if (r < 0)
			return r;
		ino = a.ino;
	}
	*ret = ino;
	return 0;
}

/* Splits path into its directory's inode and its last name. */
static int wo_parent(const char *path, uint64_t *dir, const char **name)
{
	static char buf[4096];
	char *slash;

	snprintf(buf, sizeof(buf), "%s", path);
	slash = strrchr(buf, '/');
	if (!slash)
		return -EINVAL;
	*name = slash + 1;
	if (slash == buf)
		return *dir = EXT3D_ROOT_INO, 0;
	*slash = '\0';
	return wo_ino(buf, dir);
}

static void wo_print_attr(const ext3d_attr *a)
{
	printf("ok mode=%o nlink=%u uid=%u gid=%u size=%" PRIu64 " blocks=%" PRIu64, a->mode,
	       a->nlink, a->uid, a->gid, a->size, a->blocks);
	if (S_ISCHR(a->mode) || S_ISBLK(a->mode))
		printf(" rdev=%u", a->rdev);
	printf("\n");
}

/* POSIX cksum's CRC of n bytes. */
static uint32_t wo_crc(const uint8_t *p, size_t n)
{
	uint32_t crc = 0;

	for (size_t i = 0; i < n; i++) {
		crc ^= (uint32_t)p[i] << 24;
		for (int k = 0; k < 8; k++)
			crc = crc & 0x80000000u ? (crc << 1) ^ 0x04c11db7u : crc << 1;
	}
	for (size_t len = n; len; len >>= 8) {
		crc ^= (uint32_t)(len & 0xff) << 24;
		for (int k = 0; k < 8; k++)
			crc = crc & 0x80000000u ? (crc << 1) ^ 0x04c11db7u : crc << 1;
	}
	return ~crc;
}

static bool wo_has(char **av, int ac, const char *word)
{
	for (int i = 0; i < ac; i++)
		if (strcmp(av[i], word) == 0)
			return true;
	return false;
}

static int wo_write(char **av, int ac)
{
	unsigned flags = (wo_has(av, ac, "append") ? EXT3D_WRITE_APPEND : 0) |
			 (wo_has(av, ac, "sync") ? EXT3D_WRITE_SYNC : 0);
	bool fill = strcmp(av[0], "fill") == 0;
	uint64_t ino, off = strtoull(av[2], NULL, 0);
	size_t len = fill ? strtoull(av[3], NULL, 0) : strlen(av[3]);
	uint8_t *buf = malloc(len ? len : 1);
	ssize_t n;
	int r = wo_ino(av[1], &ino);

	if (!buf)
		return -ENOMEM;
	if (fill) {
		uint32_t x = (uint32_t)strtoul(av[4], NULL, 0) * 2654435761u + 1;
		for (size_t i = 0; i < len; i++)
			buf[i] = (uint8_t)((x = x * 1103515245u + 12345u) >> 16);
	} else {
		memcpy(buf, av[3], len);
	}
	n = r < 0 ? r : ext3d_write_ino(wo_fs, ino, buf, len, off, flags);
	if (n >= 0)
		printf("ok %zd crc=%u\n", n, wo_crc(buf, (size_t)n));
	free(buf);
	return n < 0 ? (int)n : 0;
}

static int wo_read(char **av, bool text)
{
	uint64_t ino, off = strtoull(av[2], NULL, 0);
	size_t len = strtoull(av[3], NULL, 0);
	uint8_t *buf = malloc(len ? len : 1);
	ssize_t n;
	int r = wo_ino(av[1], &ino);

	if (!buf)
		return -ENOMEM;
	n = r < 0 ? r : ext3d_read_ino(wo_fs, ino, buf, len, off);
	if (n >= 0 && text)
		printf("ok %.*s\n", (int)n, (const char *)buf);
	else if (n >= 0)
		printf("ok %zd crc=%u\n", n, wo_crc(buf, (size_t)n));
	free(buf);
	return n < 0 ? (int)n : 0;
}

/* FIELD=VALUE words into a setattr. */
static int wo_setattr(char **av, int ac)
{
	ext3d_setattr set = {0};
	unsigned valid = 0;
	ext3d_attr a;
	uint64_t ino;
	int r;

	for (int i = 2; i < ac; i++) {
		char *v = strchr(av[i], '=');
		if (!v)
			return -EINVAL;
		*v++ = '\0';
		if (strcmp(av[i], "mode") == 0)
			set.mode = (uint32_t)strtoul(v, NULL, 8), valid |= EXT3D_SET_MODE;
		else if (strcmp(av[i], "uid") == 0)
			set.uid = (uint32_t)strtoul(v, NULL, 10), valid |= EXT3D_SET_UID;
		else if (strcmp(av[i], "gid") == 0)
			set.gid = (uint32_t)strtoul(v, NULL, 10), valid |= EXT3D_SET_GID;
		else if (strcmp(av[i], "size") == 0)
			set.size = strtoull(v, NULL, 0), valid |= EXT3D_SET_SIZE;
		else if (strcmp(av[i], "atime") == 0 && strcmp(v, "now") == 0)
			valid |= EXT3D_SET_ATIME_NOW;
		else if (strcmp(av[i], "mtime") == 0 && strcmp(v, "now") == 0)
			valid |= EXT3D_SET_MTIME_NOW;
		else if (strcmp(av[i], "atime") == 0)
			set.atime = strtoll(v, &v, 10), set.atime_ns = (uint32_t)strtoul(*v ? v + 1 : v, NULL, 10),
			valid |= EXT3D_SET_ATIME;
		else if (strcmp(av[i], "mtime") == 0)
			set.mtime = strtoll(v, &v, 10), set.mtime_ns = (uint32_t)strtoul(*v ? v + 1 : v, NULL, 10),
			valid |= EXT3D_SET_MTIME;
		else
			return -EINVAL;
	}
	r = wo_ino(av[1], &ino);
	if (r == 0)
		r = ext3d_setattr_ino(wo_fs, ino, &set, valid, &a);
	if (r == 0)
		wo_print_attr(&a);
	return r;
}

static int wo_times(char **av)
{
	ext3d_attr a;
	uint64_t ino;
	int r = wo_ino(av[1], &ino);

	if (r == 0)
		r = ext3d_getattr(wo_fs, ino, &a);
	if (r == 0)
		printf("ok atime=%" PRId64 " mtime=%" PRId64 "\n", a.atime, a.mtime);
	return r;
}

static int wo_ns(char **av, int ac)
{
	const char *name = NULL, *name2 = NULL;
	uint64_t dir, dir2, ino;
	ext3d_attr a;
	int r;

	if (strcmp(av[0], "symlink") == 0) {
		r = wo_parent(av[2], &dir, &name);
		return r < 0 ? r : ext3d_symlink_ino(wo_fs, dir, name, av[1], NULL);
	}
	if (strcmp(av[0], "link") == 0) {
		r = wo_ino(av[1], &ino);
		if (r == 0)
			r = wo_parent(av[2], &dir, &name);
		return r < 0 ? r : ext3d_link_ino(wo_fs, ino, dir, name, NULL);
	}
	if (strcmp(av[0], "rename") == 0) {
		char old[4096];
		snprintf(old, sizeof(old), "%s", av[1]);
		r = wo_parent(old, &dir, &name);
		if (r < 0)
			return r;
		snprintf(old, sizeof(old), "%s", name);
		r = wo_parent(av[2], &dir2, &name2);
		return r < 0 ? r : ext3d_rename_ino(wo_fs, dir, old, dir2, name2,
						    (wo_has(av, ac, "noreplace") ? EXT3D_RENAME_NOREPLACE : 0) |
						    (wo_has(av, ac, "exchange") ? EXT3D_RENAME_EXCHANGE : 0));
	}
	r = wo_parent(av[1], &dir, &name);
	if (r < 0)
		return r;
	if (strcmp(av[0], "unlink") == 0)
		return ext3d_unlink_ino(wo_fs, dir, name);
	if (strcmp(av[0], "rmdir") == 0)
		return ext3d_rmdir_ino(wo_fs, dir, name);
	uint32_t mode = (uint32_t)strtoul(av[2], NULL, 8);
	if (strcmp(av[0], "mkdir") == 0)
		mode |= S_IFDIR;
	r = ext3d_mknod_ino(wo_fs, dir, name, mode, ac > 3 ? (uint32_t)strtoul(av[3], NULL, 0) : 0,
			    &a);
	if (r == 0)
		wo_print_attr(&a);
	return r == 0 ? 1 : r;
}

/* pmknod PATH MODE [RDEV] or plink OLD NEW: the path calls. */
static int wo_path(char **av, int ac)
{
	if (strcmp(av[0], "plink") == 0)
		return ext3d_link(wo_fs, av[1], av[2]);
	return ext3d_mknod(wo_fs, av[1], (uint32_t)strtoul(av[2], NULL, 8),
			   ac > 3 ? (uint32_t)strtoul(av[3], NULL, 0) : 0);
}

/* actas UID GID [GROUP...] or actas off. */
static int wo_actas(char **av, int ac)
{
	ext3d_creds c = {0};

	if (!strcmp(av[1], "off"))
		return ext3d_act_as(wo_fs, NULL);
	if (ac < 3)
		return -EINVAL;
	c.uid = (uint32_t)strtoul(av[1], NULL, 10);
	c.gid = (uint32_t)strtoul(av[2], NULL, 10);
	for (int i = 3; i < ac && c.ngroups < EXT3D_MAX_GROUPS; i++)
		c.groups[c.ngroups++] = (uint32_t)strtoul(av[i], NULL, 10);
	return ext3d_act_as(wo_fs, &c);
}

/* One command; 1 when it printed its own "ok" line. */
static int wo_run(char **av, int ac)
{
	const char *c = av[0];
	ext3d_fsstat st;
	ext3d_attr a;
	uint64_t ino;
	int r;

	if (!strcmp(c, "mknod") || !strcmp(c, "mkdir") || !strcmp(c, "symlink") ||
	    !strcmp(c, "link") || !strcmp(c, "unlink") || !strcmp(c, "rmdir") ||
	    !strcmp(c, "rename"))
		return wo_ns(av, ac);
	if ((!strcmp(c, "write") && ac >= 4) || (!strcmp(c, "fill") && ac >= 5))
	{
		r = wo_write(av, ac);
		return r < 0 ? r : 1;
	}
	if ((!strcmp(c, "read") || !strcmp(c, "cat")) && ac >= 4) {
		r = wo_read(av, c[0] == 'c');
		return r < 0 ? r : 1;
	}
	if (!strcmp(c, "setattr") && ac >= 2) {
		r = wo_setattr(av, ac);
		return r < 0 ? r : 1;
	}
	if (!strcmp(c, "times") && ac >= 2) {
		r = wo_times(av);
		return r < 0 ? r : 1;
	}
	if ((!strcmp(c, "pmknod") || !strcmp(c, "plink")) && ac >= 3)
		return wo_path(av, ac);
	if (!strcmp(c, "sync"))
		return ext3d_sync(wo_fs);
	if (!strcmp(c, "actas") && ac >= 2)
		return wo_actas(av, ac);
	if (!strcmp(c, "sleep") && ac >= 2)
		return usleep((useconds_t)strtoul(av[1], NULL, 10) * 1000), 0;
	if (!strcmp(c, "statfs")) {
		r = ext3d_statfs(wo_fs, &st);
		if (r == 0)
			printf("ok bfree=%" PRIu64 " ffree=%" PRIu64 "\n", st.bfree, st.ffree);
		return r < 0 ? r : 1;
	}
	if (ac < 2)
		return -EINVAL;
	r = wo_ino(av[1], &ino);
	if (r < 0)
		return r;
	if (!strcmp(c, "fsync"))
		return ext3d_fsync_ino(wo_fs, ino, wo_has(av, ac, "data"));
	if (!strcmp(c, "fallocate") && ac >= 5)
		return ext3d_fallocate_ino(wo_fs, ino, (int)strtol(av[2], NULL, 0),
					   strtoull(av[3], NULL, 0), strtoull(av[4], NULL, 0));
	if (!strcmp(c, "forget"))
		return ext3d_forget(wo_fs, ino, UINT32_MAX); /* every grant it has */
	if (!strcmp(c, "hold"))
		return printf("ok ino:%" PRIu64 "\n", ino), 1;
	if (!strcmp(c, "readlink")) {
		char buf[4096];
		ssize_t n = ext3d_readlink_ino(wo_fs, ino, buf, sizeof(buf));
		if (n >= 0)
			printf("ok %.*s\n", (int)n, buf);
		return n < 0 ? (int)n : 1;
	}
	if (!strcmp(c, "stat")) {
		r = ext3d_getattr(wo_fs, ino, &a);
		if (r == 0)
			wo_print_attr(&a);
		return r < 0 ? r : 1;
	}
	return -EINVAL;
}

int main(int argc, char **argv)
{
	const char *instance = argc > 2 && !strcmp(argv[1], "--instance") ? argv[2] : NULL;
	char line[8192];
	int r = ext3d_attach(instance, &wo_fs);

	if (r < 0) {
		const char *why = ext3d_attach_detail();
		fprintf(stderr, "wops: attach: %s%s%s\n", strerror(-r), *why ? ": " : "", why);
		return 1;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	while (fgets(line, sizeof(line), stdin)) {
		char *av[WO_ARGS], *save = NULL;
		int ac = 0;
		for (char *w = strtok_r(line, " \t\n", &save); w && ac < WO_ARGS;
		     w = strtok_r(NULL, " \t\n", &save))
			av[ac++] = w;
		if (ac == 0 || av[0][0] == '#')
			continue;
		r = wo_run(av, ac);
		if (r == 0)
			printf("ok\n");
		else if (r < 0)
			printf("%s\n", wo_err(r));
	}
	ext3d_detach(wo_fs);
	return 0;
}
