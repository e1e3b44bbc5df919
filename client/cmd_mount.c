/* cmd_mount.c - ext3d mount DIR and ext3d umount: the supervisor starts
 * the instance's FUSE front end (ext3d-fuse) at DIR, or unmounts it and
 * stops it; ext3d mount --check DIR checks DIR alone (compose/up); and the
 * clean-up of a stale mount after a supervisor died. */
#define _GNU_SOURCE
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "mountpt.h"
#include "rpc.h"

/* Longer than a service's start timeout: the reply comes once mounted. */
#define CLI_MOUNT_TIMEOUT_MS 30000

/* The absolute path of dir. A stale mount point cannot be resolved
 * itself (stat gives ENOTCONN): its parent is, and its name appended. */
static int cli_mount_path(const char *dir, char *out, size_t len)
{
	char parent[PATH_MAX], tmp[PATH_MAX], *base;
	int n;

	if (realpath(dir, tmp)) {
		n = snprintf(out, len, "%s", tmp);
		return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
	}
	if (errno != ENOTCONN)
		return -errno;
	snprintf(tmp, sizeof(tmp), "%s", dir);
	base = basename(tmp);
	snprintf(parent, sizeof(parent), "%s", dir);
	if (!realpath(dirname(parent), parent))
		return -errno;
	n = snprintf(out, len, "%s/%s", strcmp(parent, "/") ? parent : "", base);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* --check: whether path can take the mount, without asking the instance
 * (compose/up, before it starts one); a stale mount there is removed. */
static int cli_mount_check(const char *path)
{
	char why[CM_PATH_MAX + 128];
	int r = cm_mount_check_dir(path, why, sizeof(why));

	if (r < 0) {
		fprintf(stderr, "ext3d: %s\n", why);
		return 1;
	}
	if (*why)
		printf("ext3d: %s\n", why);
	return 0;
}

int cli_mount(cli_ctx *c, int argc, char **argv)
{
	Ext3d__MountRequest body = EXT3D__MOUNT_REQUEST__INIT;
	Ext3d__Request req = EXT3D__REQUEST__INIT;
	char path[CM_PATH_MAX], what[CM_PATH_MAX + 32];
	Ext3d__Reply *reply;
	int r;

	bool check = argc == 3 && strcmp(argv[1], "--check") == 0;

	if (argc == 4 && strcmp(argv[1], "-o") == 0) {
		body.options = argv[2];
	} else if (argc != 2 && !check) {
		return cli_fail("usage: mount [-o OPTIONS] DIR | mount --check DIR", -EINVAL);
	}
	r = cli_mount_path(argv[argc - 1], path, sizeof(path));
	if (r < 0) {
		snprintf(what, sizeof(what), "mount point %s", argv[argc - 1]);
		return cli_fail(what, r);
	}
	if (check)
		return cli_mount_check(path);
	body.path = path;
	req.body_case = EXT3D__REQUEST__BODY_MOUNT;
	req.mount = &body;
	if (cli_call(c, &req, &reply, CLI_MOUNT_TIMEOUT_MS))
		return 1;
	if (*reply->detail)
		printf("ext3d: %s\n", reply->detail);
	printf("ext3d: instance %s mounted at %s\n", c->instance, path);
	rpc_reply_free(reply);
	return 0;
}

int cli_umount(cli_ctx *c, int argc, char **argv)
{
	Ext3d__UmountRequest body = EXT3D__UMOUNT_REQUEST__INIT;
	Ext3d__Request req = EXT3D__REQUEST__INIT;
	Ext3d__Reply *reply;

	(void)argv;
	if (argc != 1)
		return cli_fail("usage: umount", -EINVAL);
	req.body_case = EXT3D__REQUEST__BODY_UMOUNT;
	req.umount = &body;
	if (cli_call(c, &req, &reply, CLI_MOUNT_TIMEOUT_MS))
		return 1;
	printf("ext3d: %s\n", *reply->detail ? reply->detail : "unmounted");
	rpc_reply_free(reply);
	return 0;
}

void cli_clean_mount(const char *rundir)
{
	char file[CM_PATH_MAX + 16], path[CM_PATH_MAX] = "";
	FILE *f;
	int r;

	snprintf(file, sizeof(file), "%s/mount", rundir);
	f = fopen(file, "re");
	if (!f)
		return;
	if (!fgets(path, sizeof(path), f))
		path[0] = '\0';
	fclose(f);
	r = path[0] ? cm_mount_clean_stale(path) : 0;
	if (r > 0)
		printf("ext3d: unmounted the stale mount at %s (its ext3d-fuse had died)\n", path);
	else if (r < 0)
		fprintf(stderr, "ext3d: the stale mount at %s: %s\n", path, strerror(-r));
	if (r >= 0)
		(void)unlink(file);
}
