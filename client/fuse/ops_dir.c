/* ops_dir.c - directories: opendir, readdirplus (and readdir), releasedir,
 * fsyncdir. A directory's offsets are libext3d's cookies (an entry's
 * offset is the cookie of the entry after it), stable while others change
 * the directory. Each entry libext3d returns with attributes took a grant
 * ("." and ".." excepted); the entries that do not fit the kernel's
 * buffer (or a reply it did not take) give theirs back, as do all of a
 * plain readdir's, so that the grants match the lookups the kernel
 * counts. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "xfuse.h"

#define XF_DIR_MAX 256 /* entries fetched per request at most */

void xf_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	fi->fh = 0;
	fuse_reply_open(req, fi);
}

void xf_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fuse_reply_err(req, 0);
}

void xf_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)fi;
	fuse_reply_err(req, -ext3d_fsync_ino(xf_of(req)->fs, xf_ino(ino), datasync));
}

static bool xf_dots(const char *name)
{
	return name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'));
}

/* Did fetching this entry take a grant? */
static bool xf_granted(const ext3d_dirent *de)
{
	return de->attr.ino != 0 && !xf_dots(de->name);
}

/* Adds de to buf (room bytes left); the size it needs (> room: not added). */
static size_t xf_dir_add(fuse_req_t req, char *buf, size_t room, const ext3d_dirent *de,
			 bool plus)
{
	struct fuse_entry_param e;

	if (plus && xf_granted(de)) {
		xf_entry(xf_of(req), &de->attr, &e);
	} else {
		memset(&e, 0, sizeof(e));
		e.attr.st_ino = de->ino;
		e.attr.st_mode = DTTOIF(de->type);
	}
	if (plus)
		return fuse_add_direntry_plus(req, buf, room, de->name, &e, (off_t)de->next);
	return fuse_add_direntry(req, buf, room, de->name, &e.attr, (off_t)de->next);
}

static void xf_readdir_any(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, bool plus)
{
	xf_fs *x = xf_of(req);
	size_t max = size / (plus ? 160 : 32) + 1, used = 0;
	uint64_t cookie = (uint64_t)off;
	ext3d_dirent *ents;
	char *buf;
	int n, i, sent;

	if (max > XF_DIR_MAX)
		max = XF_DIR_MAX;
	ents = malloc(max * sizeof(*ents));
	buf = malloc(size);
	if (!ents || !buf) {
		free(ents);
		free(buf);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	n = ext3d_readdir_ino(x->fs, xf_ino(ino), &cookie, ents, max);
	for (sent = 0; sent < n; sent++) {
		size_t need = xf_dir_add(req, buf + used, size - used, &ents[sent], plus);
		if (need > size - used)
			break;
		used += need;
	}
	if (n >= 0)
		xf_accessed(x, ino);
	if (n < 0)
		fuse_reply_err(req, -n);
	else if (fuse_reply_buf(req, buf, used) != 0)
		sent = 0; /* the kernel took none of them */
	for (i = plus ? sent : 0; i < n; i++)
		if (xf_granted(&ents[i]))
			(void)ext3d_forget(x->fs, ents[i].ino, 1);
	free(buf);
	free(ents);
}

void xf_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		struct fuse_file_info *fi)
{
	(void)fi;
	xf_readdir_any(req, ino, size, off, false);
}

void xf_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	(void)fi;
	xf_readdir_any(req, ino, size, off, true);
}
