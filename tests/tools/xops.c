/* xops - extended attributes, ACLs and inode flags through libext3d's
 * path calls, one operation a line of stdin, one answer a line of
 * stdout: "ok" and what it returned, or the errno's name. xattr.t and
 * posixkern.t run scripts of it as root and as uid 1000 (setpriv) and
 * compare the answers.
 *
 *   setx PATH NAME VALUE [create|replace]   VALUE text, or @N:C (N bytes C)
 *   getx PATH NAME     prints the length and the value (text up to 64
 *                      bytes, else sum=the bytes' sum)
 *   listx PATH         prints the names, comma-separated
 *   rmx PATH NAME
 *   setacl PATH access|default SPEC   SPEC as u::rw-,u:1000:r--,g::r--,
 *                      m::r--,o::--- (or "empty": a header and no entry)
 *   getacl PATH access|default        prints the SPEC back
 *   umask OCT          the process's umask, which the create calls pass
 *   create PATH MODE   mkdir PATH MODE   chmod PATH MODE   unlink PATH
 *   stat PATH          prints the mode in octal
 *   open PATH r|w      opens and closes (the permission check)
 *   ctime PATH NAME [VALUE]  sets (removes without VALUE) and prints
 *                      "ok moved" when ctime moved (waits past a second
 *                      first on inodes without nanoseconds)
 * and the inode flags (posixkern.t):
 *   getflags PATH      prints them in hex    setflags PATH HEX
 *   open PATH a|t      opens for an append (O_APPEND) or O_TRUNC
 *   append PATH TEXT   writes TEXT through an O_APPEND open
 *   truncate PATH N    link OLD NEW    rename OLD NEW    chown PATH UID
 *   utime PATH         times to now     mtime PATH SECONDS
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "ext3d.h"

#define XO_VALUE_MAX 70000

static ext3d *xo_fs;
static char xo_val[XO_VALUE_MAX];

/* A value argument: its bytes into xo_val, the length. */
static size_t xo_value(const char *arg)
{
	size_t n;

	if (arg[0] == '@' && strchr(arg, ':')) {
		n = strtoul(arg + 1, NULL, 10);
		if (n > sizeof(xo_val))
			n = sizeof(xo_val);
		memset(xo_val, strchr(arg, ':')[1], n);
		return n;
	}
	n = strlen(arg);
	memcpy(xo_val, arg, n);
	return n;
}

static const struct {
	char c;
	uint16_t tag, named;
} xo_tags[] = {{'u', 1, 2}, {'g', 4, 8}, {'m', 16, 16}, {'o', 32, 32}};

/* SPEC into the VFS's ACL format in xo_val: the length, or -EINVAL. */
static int xo_acl_parse(const char *spec)
{
	char buf[1024], *save = NULL;
	size_t n = 4;

	memcpy(xo_val, "\2\0\0\0", 4);
	if (strcmp(spec, "empty") == 0)
		return 4;
	snprintf(buf, sizeof(buf), "%s", spec);
	for (char *e = strtok_r(buf, ",", &save); e; e = strtok_r(NULL, ",", &save)) {
		char *id = strchr(e, ':'), *perm = id ? strchr(id + 1, ':') : NULL;
		uint16_t tag = 0, p = 0;
		uint32_t v = 0xffffffffu;

		if (!perm || strlen(perm + 1) != 3 || n + 8 > sizeof(xo_val))
			return -EINVAL;
		for (size_t i = 0; i < sizeof(xo_tags) / sizeof(xo_tags[0]); i++)
			if (xo_tags[i].c == e[0])
				tag = perm > id + 1 ? xo_tags[i].named : xo_tags[i].tag;
		if (perm > id + 1)
			v = (uint32_t)strtoul(id + 1, NULL, 10);
		p = (uint16_t)((perm[1] == 'r') << 2 | (perm[2] == 'w') << 1 | (perm[3] == 'x'));
		memcpy(xo_val + n, &tag, 2);
		memcpy(xo_val + n + 2, &p, 2);
		memcpy(xo_val + n + 4, &v, 4);
		n += 8;
	}
	return (int)n;
}

static void xo_acl_print(const uint8_t *v, size_t len)
{
	printf("ok ");
	for (size_t i = 4; i + 8 <= len; i += 8) {
		uint16_t tag, p;
		uint32_t id;
		char c = '?';

		memcpy(&tag, v + i, 2);
		memcpy(&p, v + i + 2, 2);
		memcpy(&id, v + i + 4, 4);
		for (size_t k = 0; k < sizeof(xo_tags) / sizeof(xo_tags[0]); k++)
			if (xo_tags[k].tag == tag || xo_tags[k].named == tag)
				c = xo_tags[k].c;
		if (tag == 2 || tag == 8)
			printf("%s%c:%u:", i > 4 ? "," : "", c, id);
		else
			printf("%s%c::", i > 4 ? "," : "", c);
		printf("%c%c%c", p & 4 ? 'r' : '-', p & 2 ? 'w' : '-', p & 1 ? 'x' : '-');
	}
	printf("\n");
}

static const char *xo_acl_name(const char *which)
{
	return strcmp(which, "default") == 0 ? "system.posix_acl_default"
					     : "system.posix_acl_access";
}

static int xo_get(char **av, int ac, bool acl)
{
	const char *name = acl ? xo_acl_name(av[2]) : av[2];
	ssize_t n;
	long sum = 0;

	if (ac < 3)
		return -EINVAL;
	n = ext3d_getxattr(xo_fs, av[1], name, NULL, 0);
	if (n >= 0)
		n = ext3d_getxattr(xo_fs, av[1], name, xo_val, (size_t)n ? (size_t)n : 1);
	if (n < 0)
		return (int)n;
	if (acl) {
		xo_acl_print((const uint8_t *)xo_val, (size_t)n);
		return 1;
	}
	for (ssize_t i = 0; i < n; i++)
		sum += (uint8_t)xo_val[i];
	if (n <= 64)
		printf("ok %zd %.*s\n", n, (int)n, xo_val);
	else
		printf("ok %zd sum=%ld\n", n, sum);
	return 1;
}

static int xo_list(const char *path)
{
	ssize_t n = ext3d_listxattr(xo_fs, path, xo_val, sizeof(xo_val));

	if (n < 0)
		return (int)n;
	printf("ok ");
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(xo_val + i) + 1)
		printf("%s%s", i ? "," : "", xo_val + i);
	printf("\n");
	return 1;
}

static int xo_set(char **av, int ac)
{
	int flags = 0, n;

	if (!strcmp(av[0], "setacl")) {
		n = ac >= 4 ? xo_acl_parse(av[3]) : -EINVAL;
		return n < 0
			   ? n
			   : ext3d_setxattr(xo_fs, av[1], xo_acl_name(av[2]), xo_val, (size_t)n, 0);
	}
	if (ac < 4)
		return -EINVAL;
	if (ac > 4 && !strcmp(av[4], "create"))
		flags = XATTR_CREATE;
	if (ac > 4 && !strcmp(av[4], "replace"))
		flags = XATTR_REPLACE;
	return ext3d_setxattr(xo_fs, av[1], av[2], xo_val, xo_value(av[3]), flags);
}

/* open's r (read), w (write), a (append) and t (write, truncate). */
static int xo_oflags(char how)
{
	switch (how) {
	case 'w':
		return O_WRONLY;
	case 'a':
		return O_WRONLY | O_APPEND;
	case 't':
		return O_WRONLY | O_TRUNC;
	default:
		return O_RDONLY;
	}
}

static int xo_file(char **av, int ac)
{
	uint32_t mode = ac > 2 ? (uint32_t)strtoul(av[2], NULL, 8) : 0;
	ext3d_file *f;
	ext3d_attr a;
	int r;

	if (!strcmp(av[0], "create"))
		return ext3d_mknod(xo_fs, av[1], S_IFREG | mode, 0);
	if (!strcmp(av[0], "mkdir"))
		return ext3d_mkdir(xo_fs, av[1], mode);
	if (!strcmp(av[0], "chmod"))
		return ext3d_chmod(xo_fs, av[1], mode);
	if (!strcmp(av[0], "unlink"))
		return ext3d_unlink(xo_fs, av[1]);
	if (!strcmp(av[0], "stat")) {
		r = ext3d_lstat(xo_fs, av[1], &a);
		if (r == 0)
			printf("ok %o\n", a.mode);
		return r < 0 ? r : 1;
	}
	r = ext3d_open(xo_fs, av[1], xo_oflags(ac > 2 ? av[2][0] : 'r'), &f);
	return r < 0 ? r : ext3d_close(f);
}

/* The inode flags and the calls immutable and append-only refuse. */
static int xo_iflags(char **av, int ac)
{
	const char *c = av[0];
	ext3d_setattr set = {0};
	ext3d_file *f;
	ext3d_attr a;
	ssize_t n;
	int r;

	if (!strcmp(c, "getflags")) {
		r = ext3d_stat(xo_fs, av[1], &a);
		if (r == 0)
			printf("ok %x\n", a.flags);
		return r < 0 ? r : 1;
	}
	if (!strcmp(c, "utime") || !strcmp(c, "mtime")) {
		unsigned valid = c[0] == 'u' ? EXT3D_SET_ATIME_NOW | EXT3D_SET_MTIME_NOW
					     : EXT3D_SET_MTIME;
		set.mtime = ac > 2 ? strtoll(av[2], NULL, 10) : 0;
		r = ext3d_open(xo_fs, av[1], O_RDONLY, &f);
		if (r < 0)
			return r;
		r = ext3d_fstat(f, &a);
		if (r == 0)
			r = ext3d_setattr_ino(xo_fs, a.ino, &set, valid, NULL);
		(void)ext3d_close(f);
		return r;
	}
	if (ac < 3)
		return -EINVAL;
	if (!strcmp(c, "setflags"))
		return ext3d_setflags(xo_fs, av[1], (uint32_t)strtoul(av[2], NULL, 16));
	if (!strcmp(c, "truncate"))
		return ext3d_truncate(xo_fs, av[1], strtoull(av[2], NULL, 10));
	if (!strcmp(c, "link"))
		return ext3d_link(xo_fs, av[1], av[2]);
	if (!strcmp(c, "rename"))
		return ext3d_rename(xo_fs, av[1], av[2]);
	if (!strcmp(c, "chown"))
		return ext3d_chown(xo_fs, av[1], (uint32_t)strtoul(av[2], NULL, 10), (uint32_t)-1);
	r = ext3d_open(xo_fs, av[1], O_WRONLY | O_APPEND, &f);
	if (r < 0)
		return r;
	n = ext3d_write(f, av[2], strlen(av[2]));
	r = ext3d_close(f);
	return n < 0 ? (int)n : r;
}

static int xo_ctime(char **av, int ac)
{
	ext3d_attr b, a;
	int r = ext3d_stat(xo_fs, av[1], &b);

	if (r < 0 || ac < 3)
		return r < 0 ? r : -EINVAL;
	if (b.ctime_ns == 0)
		sleep(1);
	r = ac > 3 ? ext3d_setxattr(xo_fs, av[1], av[2], av[3], strlen(av[3]), 0)
		   : ext3d_removexattr(xo_fs, av[1], av[2]);
	if (r == 0)
		r = ext3d_stat(xo_fs, av[1], &a);
	if (r < 0)
		return r;
	printf("ok %s\n", a.ctime > b.ctime || (a.ctime == b.ctime && a.ctime_ns > b.ctime_ns)
			      ? "moved"
			      : "still");
	return 1;
}

static int xo_run(char **av, int ac)
{
	const char *c = av[0];

	if (!strcmp(c, "umask") && ac > 1)
		return umask((mode_t)strtoul(av[1], NULL, 8)), 0;
	if (ac < 2)
		return -EINVAL;
	if (!strcmp(c, "setx") || !strcmp(c, "setacl"))
		return xo_set(av, ac);
	if (!strcmp(c, "getx") || !strcmp(c, "getacl"))
		return xo_get(av, ac, c[3] == 'a');
	if (!strcmp(c, "ctime"))
		return xo_ctime(av, ac);
	if (!strcmp(c, "listx"))
		return xo_list(av[1]);
	if (!strcmp(c, "rmx"))
		return ac < 3 ? -EINVAL : ext3d_removexattr(xo_fs, av[1], av[2]);
	if (!strcmp(c, "create") || !strcmp(c, "mkdir") || !strcmp(c, "chmod") ||
	    !strcmp(c, "unlink") || !strcmp(c, "stat") || !strcmp(c, "open"))
		return xo_file(av, ac);
	if (!strcmp(c, "getflags") || !strcmp(c, "setflags") || !strcmp(c, "truncate") ||
	    !strcmp(c, "link") || !strcmp(c, "rename") || !strcmp(c, "chown") ||
	    !strcmp(c, "utime") || !strcmp(c, "mtime") || !strcmp(c, "append"))
		return xo_iflags(av, ac);
	return -EINVAL;
}

int main(int argc, char **argv)
{
	const char *instance = argc > 2 && !strcmp(argv[1], "--instance") ? argv[2] : NULL;
	char line[4096];
	int r = ext3d_attach(instance, &xo_fs);

	if (r < 0) {
		fprintf(stderr, "xops: attach: %s\n", strerror(-r));
		return 1;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	while (fgets(line, sizeof(line), stdin)) {
		char *av[6], *save = NULL, *w = strtok_r(line, " \t\n", &save);
		int ac = 0;

		for (; w && ac < 6; w = strtok_r(NULL, " \t\n", &save))
			av[ac++] = w;
		if (ac == 0 || av[0][0] == '#')
			continue;
		r = xo_run(av, ac);
		if (r < 0)
			printf("%s\n", strerrorname_np(-r) ? strerrorname_np(-r) : "E?");
		else if (r == 0)
			printf("ok\n");
	}
	ext3d_detach(xo_fs);
	return 0;
}
