/* opts.c - ext3d-fuse's command line: --instance NAME, --source NAME,
 * --clean-stale,
 * -f, -d, -o with
 * the daemon's own options (writeback_cache, attr_timeout=S,
 * entry_timeout=S) taken out and the others (ro, fsname=..., max_read=...)
 * passed on to libfuse, and the mount point. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xfuse.h"

#define XF_TIMEOUT_MAX 3600.0

static void xf_usage(FILE *f)
{
	fprintf(f, "usage: ext3d-fuse [--instance NAME] [--clean-stale] [-o opt,...] [-f] [-d] "
		   "MOUNTPOINT\n"
		   "  --instance NAME     the ext3d instance to mount ($EXT3D_INSTANCE, default)\n"
		   "  --source NAME       the mount's source in /proc/mounts (the image;\n"
		   "                      default ext3d:INSTANCE)\n"
		   "  --clean-stale       unmount a stale FUSE mount left there by a dead daemon\n"
		   "  -f                  stay in the foreground\n"
		   "  -d                  print FUSE's requests (implies -f)\n"
		   "  -o writeback_cache  let the kernel cache writes (off by default)\n"
		   "  -o attr_timeout=S   seconds the kernel caches attributes (default 1)\n"
		   "  -o entry_timeout=S  seconds the kernel caches names (default 1)\n"
		   "  -o OPT              other options go to FUSE (ro, max_read=N, ...)\n");
}

static int xf_timeout(const char *v, double *ret)
{
	char *end;
	double d = strtod(v, &end);

	if (end == v || *end || !(d >= 0 && d <= XF_TIMEOUT_MAX))
		return -EINVAL;
	*ret = d;
	return 0;
}

/* One option of a -o list. */
static int xf_opt_one(xf_config *cfg, const char *o)
{
	size_t n;

	if (strcmp(o, "writeback_cache") == 0) {
		cfg->writeback = true;
		return 0;
	}
	if (strcmp(o, "no_writeback_cache") == 0) {
		cfg->writeback = false;
		return 0;
	}
	if (strncmp(o, "attr_timeout=", 13) == 0)
		return xf_timeout(o + 13, &cfg->attr_timeout);
	if (strncmp(o, "entry_timeout=", 14) == 0)
		return xf_timeout(o + 14, &cfg->entry_timeout);
	if (strcmp(o, "allow_other") == 0 || strcmp(o, "default_permissions") == 0)
		return 0; /* always on */
	n = strlen(cfg->fuse_opts);
	if (n + strlen(o) + 2 > sizeof(cfg->fuse_opts))
		return -E2BIG;
	snprintf(cfg->fuse_opts + n, sizeof(cfg->fuse_opts) - n, "%s%s", n ? "," : "", o);
	return 0;
}

static int xf_opt_list(xf_config *cfg, const char *list)
{
	char buf[1024], *save = NULL;

	if (strlen(list) >= sizeof(buf))
		return -E2BIG;
	strcpy(buf, list);
	for (char *o = strtok_r(buf, ",", &save); o; o = strtok_r(NULL, ",", &save)) {
		int r = xf_opt_one(cfg, o);
		if (r < 0) {
			fprintf(stderr, "ext3d-fuse: bad option '%s'\n", o);
			return r;
		}
	}
	return 0;
}

int xf_opts_parse(int argc, char **argv, xf_config *cfg)
{
	*cfg = (xf_config){.attr_timeout = 1.0, .entry_timeout = 1.0};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			xf_usage(stdout);
			return 1;
		} else if (strcmp(a, "--instance") == 0 && i + 1 < argc) {
			cfg->instance = argv[++i];
		} else if (strncmp(a, "--instance=", 11) == 0) {
			cfg->instance = a + 11;
		} else if (strcmp(a, "--source") == 0 && i + 1 < argc) {
			cfg->source = argv[++i];
		} else if (strcmp(a, "-o") == 0 && i + 1 < argc) {
			if (xf_opt_list(cfg, argv[++i]) < 0)
				return -EINVAL;
		} else if (strncmp(a, "-o", 2) == 0 && a[2]) {
			if (xf_opt_list(cfg, a + 2) < 0)
				return -EINVAL;
		} else if (strcmp(a, "--clean-stale") == 0) {
			cfg->clean_stale = true;
		} else if (strcmp(a, "-f") == 0) {
			cfg->foreground = true;
		} else if (strcmp(a, "-d") == 0) {
			cfg->debug = cfg->foreground = true;
		} else if (a[0] != '-' && !cfg->mountpoint) {
			cfg->mountpoint = a;
		} else {
			fprintf(stderr, "ext3d-fuse: unexpected argument '%s'\n", a);
			xf_usage(stderr);
			return -EINVAL;
		}
	}
	if (!cfg->mountpoint) {
		fprintf(stderr, "ext3d-fuse: no mount point given\n");
		xf_usage(stderr);
		return -EINVAL;
	}
	return 0;
}
