/*
 * t_tree.c - builds the host tree for test-ext3fs (see t_tree.h): nested
 * directories, empty, small and multi-MiB files, sparse files reaching
 * the double and triple indirect maps, fast and slow symlinks, hard links,
 * a fifo, a socket, device nodes, odd names, modes and owners, and the big
 * directory.
 */
#define _GNU_SOURCE
#include "t_tree.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

void t_fill(uint8_t *buf, size_t len, uint64_t seed)
{
	uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
	size_t i;

	for (i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		buf[i] = x >> 24;
	}
}

void t_big_name(unsigned i, char *buf, size_t len)
{
	if (i % 50 == 0)
		snprintf(buf, len, "\xc3\xbcn\xc3\xaf-%05u-\xc3\x9f\xc3\xb8", i);
	else if (i % 997 == 0)
		snprintf(buf, len, "long-%05u-%0100u", i, i);
	else
		snprintf(buf, len, "file-%05u", i);
}

/* Writes len bytes of seeded data (or zeros if seed is 0) at off. */
static int put(const char *dir, const char *rel, uint64_t off, size_t len,
	       uint64_t seed)
{
	char path[4096];
	uint8_t *buf = calloc(1, len ? len : 1);
	int fd, r = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	fd = open(path, O_WRONLY | O_CREAT, 0644);
	if (fd < 0 || !buf) {
		free(buf);
		if (fd >= 0)
			close(fd);
		return -EIO;
	}
	if (seed)
		t_fill(buf, len, seed);
	if (len && pwrite(fd, buf, len, (off_t)off) != (ssize_t)len)
		r = -EIO;
	close(fd);
	free(buf);
	return r;
}

static int truncate_at(const char *dir, const char *rel, uint64_t size)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	return truncate(path, (off_t)size) < 0 ? -errno : 0;
}

static int mk(const char *dir, const char *rel, mode_t mode)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	if (mkdir(path, mode) < 0 || chmod(path, mode) < 0)
		return -errno;
	return 0;
}

static int sym(const char *dir, const char *rel, const char *target)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	return symlink(target, path) < 0 ? -errno : 0;
}

static int hardlink(const char *dir, const char *from, const char *to)
{
	char a[4096], b[4096];

	snprintf(a, sizeof(a), "%s/%s", dir, from);
	snprintf(b, sizeof(b), "%s/%s", dir, to);
	return link(a, b) < 0 ? -errno : 0;
}

static int node(const char *dir, const char *rel, mode_t mode, dev_t dev)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	return mknod(path, mode, dev) < 0 ? -errno : 0;
}

static int own(const char *dir, const char *rel, uid_t uid, gid_t gid,
	       mode_t mode)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	if (lchown(path, uid, gid) < 0 || chmod(path, mode) < 0)
		return -errno;
	return 0;
}

static int unix_socket(const char *dir, const char *rel)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, r = 0;

	if ((size_t)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", dir,
			     rel) >= sizeof(sa.sun_path))
		return 0;	/* path too long for a socket: leave it out */
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		r = -errno;
	close(fd);
	return r;
}

static int build_files(const char *d)
{
	char target[1024];
	int r = 0;

	r |= mk(d, "a", 0755) | mk(d, "a/b", 0750) | mk(d, "a/b/c", 0700);
	r |= mk(d, "a/b/empty_dir", 0755);
	r |= put(d, "empty", 0, 0, 0) | put(d, "small.txt", 0, 6, 1);
	r |= put(d, "a/b/c/deep.txt", 0, 3000, 2);
	r |= put(d, "big.bin", 0, (5u << 20) + 123, 3);
	r |= put(d, "holes.bin", 0, 100, 4);
	r |= put(d, "holes.bin", 300 << 10, 4096, 5);
	r |= put(d, "holes.bin", T_HOLE_TIND, 1024, 6);
	r |= truncate_at(d, "holes.bin", 75u << 20);
	r |= put(d, "huge.bin", T_HUGE_OFF, 4096 + 100, 7);
	r |= put(d, "tail_hole.bin", 0, 5000, 8);
	r |= truncate_at(d, "tail_hole.bin", 200000);
	r |= put(d, "link1", 0, 777, 9);
	r |= hardlink(d, "link1", "a/link2") | hardlink(d, "link1", "a/b/link3");
	r |= sym(d, "fast_link", "small.txt");
	memset(target, 'y', 100);
	memcpy(target, "a/b/", 4);
	target[100] = '\0';
	r |= sym(d, "slow_link", target);
	memset(target, 'z', 900);
	target[900] = '\0';
	r |= sym(d, "a/slow_long", target);
	r |= sym(d, "a/dangling", "/nonexistent/target");
	r |= sym(d, "max_fast", "0123456789012345678901234567890123456789"
				"0123456789012345678");	/* 59 bytes */
	r |= node(d, "fifo", S_IFIFO | 0644, 0);
	r |= unix_socket(d, "sock");
	return r;
}

static int build_names(const char *d)
{
	static const char *const names[] = {
		"with space", "h\xc3\xa9llo w\xc3\xb6rld",
		"\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e", "-dash", "tab\tname",
		"new\nline", ".hidden", "...", "a=b;c&d|e", "\x7f\x01\xff",
	};
	char name[300];
	unsigned i;
	int r = mk(d, "names", 0755);

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(name, sizeof(name), "names/%s", names[i]);
		r |= put(d, name, 0, i * 10, 20 + i);
	}
	memset(name, 'x', sizeof(name));
	memcpy(name, "names/", 6);
	name[6 + 255] = '\0';
	r |= put(d, name, 0, 1, 30);
	return r;
}

static int build_modes(const char *d, bool root)
{
	int r = mk(d, "modes", 0755);

	r |= put(d, "modes/m4755", 0, 1, 41);
	r |= put(d, "modes/m2711", 0, 1, 42) | put(d, "modes/m0600", 0, 1, 43);
	r |= mk(d, "modes/sticky", 01777);
	r |= own(d, "modes/m4755", getuid(), getgid(), 04755);
	r |= own(d, "modes/m2711", getuid(), getgid(), 02711);
	r |= own(d, "modes/m0600", getuid(), getgid(), 0600);
	if (!root)
		return r;	/* mke2fs -d could not read a mode 0 file */
	r |= put(d, "modes/m0000", 0, 1, 40);
	r |= own(d, "modes/m0000", getuid(), getgid(), 0);
	r |= put(d, "modes/owned", 0, 1, 44) | put(d, "modes/owned_high", 0, 1, 45);
	r |= own(d, "modes/owned", 1234, 5678, 0640);
	r |= own(d, "modes/owned_high", 100000, 200000, 0604);
	r |= mk(d, "modes/dir_owned", 0710) |
	     own(d, "modes/dir_owned", 4321, 8765, 0710);
	r |= node(d, "chr", S_IFCHR | 0620, makedev(1, 3));
	r |= node(d, "blk", S_IFBLK | 0660, makedev(8, 1));
	r |= node(d, "chr_big", S_IFCHR | 0600, makedev(300, 70000));
	return r;
}

int t_tree_build(const char *dir, unsigned big_host, bool *ret_root)
{
	char name[300], rel[400];
	bool root = geteuid() == 0;
	unsigned i;
	int r;

	umask(0);
	if (mkdir(dir, 0755) < 0)
		return -errno;
	r = build_files(dir) | build_names(dir) | build_modes(dir, root);
	r |= mk(dir, T_BIG_DIR, 0755);
	for (i = 0; i < big_host && r == 0; i++) {
		t_big_name(i, name, sizeof(name));
		snprintf(rel, sizeof(rel), "%s/%s", T_BIG_DIR, name);
		r |= put(dir, rel, 0, 0, 0);
	}
	umask(022);
	*ret_root = root;
	return r ? -EIO : 0;
}
