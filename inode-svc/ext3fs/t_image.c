/*
 * t_image.c - test helpers for libext3fs (see t_image.h).  The block
 * source preads each block into its own buffer, so a put after free or a
 * missing put shows up under ASan and in the held counter.
 */
#define _GNU_SOURCE
#include "t_image.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const void *img_get(void *ctx, uint64_t blocknr, void **cookie,
			   int *err)
{
	t_img *img = ctx;
	uint32_t bs = img->bs;
	ssize_t n;
	void *buf;

	if (blocknr >= img->size / bs) {
		*err = -EIO;
		return NULL;
	}
	buf = aligned_alloc(64, bs);
	if (!buf) {
		*err = -ENOMEM;
		return NULL;
	}
	n = pread(img->fd, buf, bs, (off_t)(blocknr * bs));
	if (n != (ssize_t)bs) {
		*err = n < 0 ? -errno : -EIO;
		free(buf);
		return NULL;
	}
	*cookie = buf;
	img->gets++;
	img->held++;
	return buf;
}

static void img_put(void *ctx, void *cookie)
{
	t_img *img = ctx;

	img->held--;
	free(cookie);
}

int t_img_open(t_img *img, const char *path)
{
	uint8_t sb[1024];
	struct stat st;
	uint32_t bs = 1024;

	memset(img, 0, sizeof(*img));
	img->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (img->fd < 0)
		return -errno;
	if (fstat(img->fd, &st) < 0) {
		close(img->fd);
		return -errno;
	}
	img->size = st.st_size;
	if (pread(img->fd, sb, sizeof(sb), 1024) == sizeof(sb) &&
	    ino_probe_block_size(sb, &bs) < 0)
		bs = 1024;
	img->bs = bs;
	img->src = (ino_blksrc){ .get = img_get, .put = img_put, .ctx = img,
				 .block_size = bs };
	return 0;
}

void t_img_close(t_img *img)
{
	if (img->fd >= 0)
		close(img->fd);
	img->fd = -1;
}

int t_img_mount(t_img *img, ino_fs **ret, char *why, size_t whylen)
{
	return ino_fs_mount(&img->src, img->size, ret, why, whylen);
}

int t_patch(const char *path, uint64_t off, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), r = 0;

	if (fd < 0)
		return -errno;
	if (pwrite(fd, buf, len, (off_t)off) != (ssize_t)len)
		r = -EIO;
	close(fd);
	return r;
}

int t_peek(const char *path, uint64_t off, void *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), r = 0;

	if (fd < 0)
		return -errno;
	if (pread(fd, buf, len, (off_t)off) != (ssize_t)len)
		r = -EIO;
	close(fd);
	return r;
}

__attribute__((format(printf, 1, 0)))
static char *vformat(const char *fmt, va_list ap)
{
	char *cmd = NULL;

	if (vasprintf(&cmd, fmt, ap) < 0)
		return NULL;
	return cmd;
}

int t_sh(const char *fmt, ...)
{
	va_list ap;
	char *cmd;
	int st;

	va_start(ap, fmt);
	cmd = vformat(fmt, ap);
	va_end(ap);
	if (!cmd)
		return -1;
	st = system(cmd);
	free(cmd);
	if (st < 0 || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

char *t_sh_out(const char *fmt, ...)
{
	size_t len = 0, cap = 65536;
	char *cmd, *out;
	va_list ap;
	FILE *p;
	size_t n;

	va_start(ap, fmt);
	cmd = vformat(fmt, ap);
	va_end(ap);
	if (!cmd)
		return NULL;
	p = popen(cmd, "r");
	free(cmd);
	out = malloc(cap);
	if (!p || !out) {
		if (p)
			pclose(p);
		free(out);
		return NULL;
	}
	while ((n = fread(out + len, 1, cap - len - 1, p)) > 0) {
		len += n;
		if (cap - len < 2) {
			char *bigger = realloc(out, cap * 2);

			if (!bigger)
				break;
			out = bigger;
			cap *= 2;
		}
	}
	out[len] = '\0';
	pclose(p);
	return out;
}

static int saved_stderr = -1;
static FILE *capture;

void t_stderr_begin(void)
{
	fflush(stderr);
	capture = tmpfile();
	saved_stderr = dup(STDERR_FILENO);
	if (capture && saved_stderr >= 0)
		dup2(fileno(capture), STDERR_FILENO);
}

int t_stderr_end(char *buf, size_t len)
{
	size_t n = 0;
	int lines = 0;

	fflush(stderr);
	if (saved_stderr >= 0) {
		dup2(saved_stderr, STDERR_FILENO);
		close(saved_stderr);
		saved_stderr = -1;
	}
	if (capture) {
		rewind(capture);
		n = fread(buf, 1, len - 1, capture);
		fclose(capture);
		capture = NULL;
	}
	buf[n] = '\0';
	for (size_t i = 0; i < n; i++)
		lines += buf[i] == '\n';
	return lines;
}

int t_have_e2fsprogs(void)
{
	const char *path = getenv("PATH");
	char *np = NULL;

	if (asprintf(&np, "/usr/sbin:/sbin:%s", path ? path : "/usr/bin:/bin") >= 0) {
		setenv("PATH", np, 1);
		free(np);
	}
	return t_sh("mke2fs -V >/dev/null 2>&1 && e2fsck -V >/dev/null 2>&1 && "
		    "debugfs -V >/dev/null 2>&1") == 0;
}

const char *t_printable(const char *s, char *buf, size_t len)
{
	size_t n = 0;

	for (; *s && n + 5 < len; s++) {
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			n += snprintf(buf + n, len - n, "\\x%02x",
				      (unsigned char)*s);
		else
			buf[n++] = *s;
	}
	buf[n] = '\0';
	return buf;
}
