/* test-perm.c - inode-svc's CAP_MKNOD and protected_hardlinks rules
 * (perm.c): which device nodes need privilege, and may_linkat's table of
 * sources for an owner, another uid, root and checked credentials. No
 * filesystem: the inodes have no ACLs. */
#include <errno.h>
#include <sys/stat.h>

#include "ops.h"
#include "sysctl.h"
#include "tap.h"

static const ino_creds t_user = {.uid = 1000, .gid = 1000};
static const ino_creds t_root = {.uid = 0, .gid = 0};
static const ino_creds t_checked = {.uid = 1000, .gid = 1000, .checked = true};

static void t_mknod(void)
{
	t_is_int(ino_perm_mknod(S_IFBLK | 0666, 0x700, &t_user), -EPERM, "user: block device EPERM");
	t_is_int(ino_perm_mknod(S_IFCHR | 0666, 0x103, &t_user), -EPERM,
		 "user: character device EPERM");
	t_is_int(ino_perm_mknod(S_IFBLK | 0666, 0, &t_user), -EPERM, "user: block device 0:0 EPERM");
	t_is_int(ino_perm_mknod(S_IFCHR, 0, &t_user), 0, "user: whiteout (char 0:0) allowed");
	t_is_int(ino_perm_mknod(S_IFIFO | 0644, 0, &t_user) | ino_perm_mknod(S_IFSOCK | 0644, 0, &t_user) |
		 ino_perm_mknod(S_IFREG | 0644, 0x700, &t_user) | ino_perm_mknod(S_IFDIR | 0755, 0, &t_user),
		 0, "user: FIFO, socket, file (whatever its rdev), directory allowed");
	t_is_int(ino_perm_mknod(S_IFBLK | 0600, 0x700, &t_root), 0, "root: block device allowed");
	t_is_int(ino_perm_mknod(S_IFCHR | 0600, 0x103, &t_checked), 0,
		 "checked credentials (the kernel asked CAP_MKNOD): allowed");
}

static int t_link(uint16_t mode, uint32_t uid, const ino_creds *c)
{
	ino_inode in = {.ino = 12, .mode = mode, .uid = uid, .gid = 0, .links = 1};

	return ino_perm_link(&in, c);
}

static void t_links(void)
{
	static const struct {
		uint16_t mode;
		int want;
		const char *what;
	} cases[] = {
		{S_IFREG | 0600, -EPERM, "root's 0600 file"},
		{S_IFREG | 0666, 0, "root's 0666 file"},
		{S_IFREG | 0777, 0, "root's 0777 file (executable, no set-gid)"},
		{S_IFREG | 0644, -EPERM, "root's 0644 file (not writable)"},
		{S_IFREG | 0622, -EPERM, "root's 0622 file (not readable)"},
		{S_IFREG | 04777, -EPERM, "root's set-uid file"},
		{S_IFREG | 02777, -EPERM, "root's set-gid, group-executable file"},
		{S_IFREG | 02767, 0, "root's set-gid file without group execution"},
		{S_IFIFO | 0666, -EPERM, "root's FIFO"},
		{S_IFCHR | 0666, -EPERM, "root's character device"},
		{S_IFLNK | 0777, -EPERM, "root's symlink"},
		{S_IFDIR | 0777, -EPERM, "root's directory"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		t_is_int(t_link(cases[i].mode, 0, &t_user), cases[i].want, "uid 1000 links %s: %s",
			 cases[i].what, cases[i].want ? "EPERM" : "allowed");
	t_is_int(t_link(S_IFREG | 04700, 1000, &t_user), 0, "the owner links its own set-uid file");
	t_is_int(t_link(S_IFIFO | 0600, 1000, &t_user), 0, "the owner links its own FIFO");
	t_is_int(t_link(S_IFREG | 04700, 1000, &t_root), 0, "root links anything (CAP_FOWNER)");
	t_is_int(t_link(S_IFREG | 0600, 0, &t_checked), 0,
		 "checked credentials (the kernel asked may_linkat) link anything");
}

int main(void)
{
	ino_perm_setup(NULL);
	t_mknod();
	if (cm_sysctl_fs("protected_hardlinks", 1) == 0)
		t_skip("fs.protected_hardlinks is 0 here", "may_linkat's table");
	else
		t_links();
	return t_done();
}
