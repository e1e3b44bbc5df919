/* mount.c - the daemon's life: check the mount point, attach to the
 * instance, mount, serve on fuse_session_loop_mt's threads until the file
 * system is unmounted (or SIGTERM / SIGINT / SIGHUP), unmount, detach.
 * With --clean-stale, a dead daemon's mount at the mount point (ENOTCONN)
 * is detached first, so that a restarted daemon mounts at the same place.
 * Every failure before serving is one line on stderr saying what is
 * wrong: the mount point, the instance, the mount itself. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mountpt.h"
#include "xfuse.h"

extern const struct fuse_lowlevel_ops xf_ops;

/* Is path (a directory) a mount point now? Compares with its parent's
 * device, then looks for it in /proc/self/mountinfo (a bind mount of the
 * same device). */
static bool xf_mounted(const char *path, const struct stat *st)
{
	char parent[4100], real[4096], line[8192];
	struct stat pst;
	bool found = false;
	FILE *f;

	if (!realpath(path, real))
		return false;
	if (strcmp(real, "/") == 0)
		return true;
	if (snprintf(parent, sizeof(parent), "%s/..", real) >= (int)sizeof(parent))
		return false;
	if (stat(parent, &pst) == 0 && (pst.st_dev != st->st_dev || pst.st_ino == st->st_ino))
		return true;
	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		char mnt[4096];
		/* id parent major:minor root mountpoint ... */
		if (sscanf(line, "%*s %*s %*s %*s %4095s", mnt) == 1)
			found = strcmp(mnt, real) == 0; /* names with spaces are escaped: no match */
	}
	fclose(f);
	return found;
}

/* A FUSE mount whose daemon died (ENOTCONN): detached, so that the
 * mount point is free again (its last users see it go when they leave). */
static int xf_clean_stale(const char *path, struct stat *st)
{
	if (umount2(path, MNT_DETACH) < 0) {
		int e = errno;
		fprintf(stderr, "ext3d-fuse: %s: cannot unmount the stale mount there: %s\n", path,
			strerror(e));
		return -e;
	}
	fprintf(stderr, "ext3d-fuse: %s: unmounted a stale FUSE mount, ignoring\n", path);
	return stat(path, st) < 0 ? -errno : 0;
}

int xf_mountpoint_check(const char *path, bool clean_stale)
{
	struct stat st;
	/* Asked of the daemon itself: cached attributes hide a dead one. */
	int r = cm_mount_stale(path) ? -ENOTCONN : stat(path, &st) < 0 ? -errno : 0;

	if (r == -ENOTCONN && clean_stale) {
		r = xf_clean_stale(path, &st);
		if (r < 0)
			return r; /* said why */
	}
	if (r == -ENOTCONN)
		fprintf(stderr, "ext3d-fuse: %s: a stale FUSE mount is there (its daemon died); "
				"unmount it first (fusermount3 -u %s) or use --clean-stale\n", path,
			path);
	else if (r == -ENOENT)
		fprintf(stderr, "ext3d-fuse: mount point %s does not exist\n", path);
	else if (r < 0)
		fprintf(stderr, "ext3d-fuse: mount point %s: %s\n", path, strerror(-r));
	if (r < 0)
		return r;
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "ext3d-fuse: mount point %s is not a directory\n", path);
		return -ENOTDIR;
	}
	if (xf_mounted(path, &st)) {
		fprintf(stderr, "ext3d-fuse: mount point %s is busy: a file system is already "
				"mounted there\n", path);
		return -EBUSY;
	}
	return 0;
}

static int xf_attach(const xf_config *cfg, ext3d **ret)
{
	const char *name = cfg->instance ? cfg->instance : getenv("EXT3D_INSTANCE");
	int r = ext3d_attach(cfg->instance, ret);

	if (!name || !*name)
		name = "default";
	if (r == -ECONNREFUSED || r == -ENOENT)
		fprintf(stderr, "ext3d-fuse: instance %s is not running\n", name);
	else if (r < 0)
		fprintf(stderr, "ext3d-fuse: cannot attach to instance %s: %s%s%s\n", name,
			strerror(-r), *ext3d_attach_detail() ? ": " : "", ext3d_attach_detail());
	return r;
}

/* fsname=SOURCE for libfuse's option list: its commas and backslashes
 * escaped, as fuse_opt_parse reads them. */
static int xf_fsname(const xf_config *cfg, const char *name, char *out, size_t len)
{
	size_t n = 0;

	if (!cfg->source) {
		int k = snprintf(out, len, "fsname=ext3d:%s", name);
		return k < 0 || (size_t)k >= len ? -E2BIG : 0;
	}
	n = (size_t)snprintf(out, len, "fsname=");
	for (const char *p = cfg->source; *p; p++) {
		if (n + 3 >= len)
			return -E2BIG;
		if (*p == ',' || *p == '\\')
			out[n++] = '\\';
		out[n++] = *p;
	}
	out[n] = '\0';
	return 0;
}

/* libfuse's arguments: the mount's options, ours first. */
static int xf_fuse_args(const xf_config *cfg, struct fuse_args *args)
{
	const char *name = cfg->instance ? cfg->instance : getenv("EXT3D_INSTANCE");
	char opts[2048], fsname[1024];
	int n;

	if (xf_fsname(cfg, name && *name ? name : "default", fsname, sizeof(fsname)) < 0)
		return -E2BIG;
	n = snprintf(opts, sizeof(opts), "%s,subtype=ext3d,default_permissions%s%s%s", fsname,
		     geteuid() == 0 ? ",allow_other" : "", cfg->fuse_opts[0] ? "," : "",
		     cfg->fuse_opts);
	if (n < 0 || (size_t)n >= sizeof(opts))
		return -E2BIG;
	if (fuse_opt_add_arg(args, "ext3d-fuse") < 0 || fuse_opt_add_arg(args, "-o") < 0 ||
	    fuse_opt_add_arg(args, opts) < 0 || (cfg->debug && fuse_opt_add_arg(args, "-d") < 0))
		return -ENOMEM;
	return 0;
}

static int xf_serve(struct fuse_session *se)
{
	struct fuse_loop_config *lc = fuse_loop_cfg_create();
	int r;

	if (!lc)
		return -ENOMEM;
	fuse_loop_cfg_set_clone_fd(lc, 1);
	r = fuse_session_loop_mt(se, lc);
	fuse_loop_cfg_destroy(lc);
	return r < 0 ? r : 0;
}

int xf_run(const xf_config *cfg)
{
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct fuse_session *se = NULL;
	xf_fs *x;
	int r = xf_mountpoint_check(cfg->mountpoint, cfg->clean_stale);

	if (r < 0)
		return r;
	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	x->cfg = *cfg;
	pthread_mutex_init(&x->keep_mtx, NULL);
	pthread_mutex_init(&x->dir_mtx, NULL);
	r = xf_attach(cfg, &x->fs);
	if (r == 0)
		r = xf_fuse_args(cfg, &args);
	if (r == 0) {
		se = fuse_session_new(&args, &xf_ops, sizeof(xf_ops), x);
		r = se ? 0 : -EINVAL; /* libfuse said why */
	}
	if (r == 0 && fuse_set_signal_handlers(se) < 0)
		r = -EIO;
	if (r == 0 && fuse_session_mount(se, cfg->mountpoint) < 0) {
		fprintf(stderr, "ext3d-fuse: cannot mount on %s\n", cfg->mountpoint);
		fuse_remove_signal_handlers(se);
		r = -EIO;
	}
	if (r == 0) {
		(void)xf_bdi_name(cfg->mountpoint, x->bdi, sizeof(x->bdi));
		(void)fuse_daemonize(cfg->foreground);
		r = xf_serve(se);
		fuse_session_unmount(se);
		fuse_remove_signal_handlers(se);
	}
	if (se)
		fuse_session_destroy(se);
	fuse_opt_free_args(&args);
	x->fs = ext3d_detach(x->fs);
	pthread_mutex_destroy(&x->keep_mtx);
	pthread_mutex_destroy(&x->dir_mtx);
	free(x);
	return r;
}
