/* sandbox_fuse.c - the confinement of a FUSE front end (ext3d-fuse), put
 * in place by the supervisor between fork and exec, since the daemon must
 * mount before it could confine itself. It stays uid 0 (inode-svc honours
 * the credentials a root peer passes for each caller) but keeps only
 * CAP_SYS_ADMIN, for mount(2) and umount2(2); no_new_privs; and a seccomp
 * deny-list (the rest is allowed: the daemon's libraries need too much to
 * list) kills it on what that capability would otherwise open: namespaces,
 * the new mount API, bind, move and remount, modules, kexec, bpf, ptrace,
 * keys, clocks, swap, io_uring. A FUSE daemon not run as root mounts with
 * the set-uid fusermount3, which no_new_privs would break: it is left as is. */
#define _GNU_SOURCE
#include "sandbox.h"

#include <errno.h>
#include <seccomp.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <unistd.h>

static const int cm_fuse_denied[] = {
	SCMP_SYS(setns), SCMP_SYS(unshare), SCMP_SYS(pivot_root), SCMP_SYS(chroot),
	SCMP_SYS(fsopen), SCMP_SYS(fsmount), SCMP_SYS(fsconfig), SCMP_SYS(fspick),
	SCMP_SYS(open_tree), SCMP_SYS(move_mount), SCMP_SYS(mount_setattr),
	SCMP_SYS(init_module), SCMP_SYS(finit_module), SCMP_SYS(delete_module),
	SCMP_SYS(kexec_load), SCMP_SYS(kexec_file_load), SCMP_SYS(reboot),
	SCMP_SYS(bpf), SCMP_SYS(perf_event_open), SCMP_SYS(ptrace),
	SCMP_SYS(process_vm_readv), SCMP_SYS(process_vm_writev), SCMP_SYS(keyctl),
	SCMP_SYS(add_key), SCMP_SYS(request_key), SCMP_SYS(open_by_handle_at),
	SCMP_SYS(name_to_handle_at), SCMP_SYS(fanotify_init), SCMP_SYS(quotactl),
	SCMP_SYS(acct), SCMP_SYS(settimeofday), SCMP_SYS(clock_settime),
	SCMP_SYS(clock_adjtime), SCMP_SYS(adjtimex), SCMP_SYS(sethostname),
	SCMP_SYS(setdomainname), SCMP_SYS(swapon), SCMP_SYS(swapoff),
	SCMP_SYS(iopl), SCMP_SYS(ioperm), SCMP_SYS(syslog), SCMP_SYS(userfaultfd),
	SCMP_SYS(io_uring_setup), SCMP_SYS(io_uring_enter), SCMP_SYS(io_uring_register),
};

/* mount(2) flags a FUSE mount never uses. */
static const unsigned long cm_fuse_mount_denied[] = {
	MS_BIND, MS_MOVE, MS_REMOUNT, MS_SHARED, MS_PRIVATE, MS_SLAVE, MS_UNBINDABLE,
};

static int cm_sandbox_fuse_filter(void)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	int r = 0;

	if (!ctx)
		return -ENOMEM;
	for (size_t i = 0; !r && i < sizeof(cm_fuse_denied) / sizeof(int); i++)
		r = seccomp_rule_add(ctx, SCMP_ACT_KILL_PROCESS, cm_fuse_denied[i], 0);
	for (size_t i = 0; !r && i < sizeof(cm_fuse_mount_denied) / sizeof(long); i++)
		r = seccomp_rule_add(ctx, SCMP_ACT_KILL_PROCESS, SCMP_SYS(mount), 1,
				     SCMP_A3(SCMP_CMP_MASKED_EQ, cm_fuse_mount_denied[i],
					     cm_fuse_mount_denied[i]));
	if (!r)
		r = seccomp_load(ctx);
	seccomp_release(ctx);
	return r;
}

int cm_sandbox_fuse_exec(void)
{
	static const cap_value_t keep[] = {CAP_SYS_ADMIN};
	static const cm_sandbox_policy caps = {NULL, 0, keep, 1};
	int r;

	if (geteuid() != 0)
		return 0;
	r = cm_sandbox_keep_caps(&caps);
	if (r < 0)
		return r;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	return cm_sandbox_fuse_filter();
}
