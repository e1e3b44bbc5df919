/*
 * t_image.h - test helpers for libext3fs: a pread block source over an
 * image file that counts gets and puts, shell commands, and capturing
 * what the library logs on stderr.
 */
#ifndef T_IMAGE_H
#define T_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "ext3fs.h"

typedef struct t_img {
	int fd;
	uint64_t size;		/* file size in bytes */
	uint32_t bs;		/* bytes get() serves; src.block_size */
	ino_blksrc src;		/* pread source; ctx = this */
	long gets;		/* get() calls that succeeded */
	long held;		/* gets not yet put: 0 between calls */
} t_img;

/*
 * Opens an image read-only; the block size comes from its superblock
 * (1024 when the superblock is unreadable).  Returns 0 or -errno.
 */
int t_img_open(t_img *img, const char *path);
void t_img_close(t_img *img);
/* ino_fs_mount() over the image, device size = file size. */
int t_img_mount(t_img *img, ino_fs **ret, char *why, size_t whylen);

/* Writes len bytes at off into the image file at path. 0 or -errno. */
int t_patch(const char *path, uint64_t off, const void *buf, size_t len);
/* Reads len bytes at off of the file at path. 0 or -errno. */
int t_peek(const char *path, uint64_t off, void *buf, size_t len);

/* Runs a shell command (printf format); returns its exit status or -1. */
int t_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Runs a command and returns its stdout (malloc'd, NUL-ended) or NULL. */
char *t_sh_out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Sends stderr to a temporary file until t_stderr_end(). */
void t_stderr_begin(void);
/* Restores stderr; copies what was written (NUL-ended) and counts lines. */
int t_stderr_end(char *buf, size_t len);

/* Copies s into buf with control bytes as \xNN, for TAP lines. */
const char *t_printable(const char *s, char *buf, size_t len);

/* Puts /usr/sbin and /sbin on PATH; true if mke2fs, e2fsck, debugfs run. */
int t_have_e2fsprogs(void);

#endif
