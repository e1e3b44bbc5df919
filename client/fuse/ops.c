/* ops.c - the FUSE operation table and the connection's capabilities.
 * The kernel, not the daemon, decides permissions (default_permissions)
 * and the set-id bits a write, truncate or chown takes away (no
 * HANDLE_KILLPRIV: it sends those as a setattr of the mode), truncates
 * for O_TRUNC (no ATOMIC_O_TRUNC: a setattr before the open), and always
 * asks for readdirplus (each entry's attributes come with the names
 * anyway). POSIX ACLs are on (POSIX_ACL): the kernel enforces the ACLs
 * it reads through getxattr, and leaves the umask to the daemon, which
 * passes it to inode-svc with the create (DONT_MASK, creds.c): there a
 * directory's default ACL masks the mode instead, as ext3 does.
 * The write-back cache is off unless -o writeback_cache. There is no
 * flush: close(2) makes nothing durable on ext3 (fsync does), and the
 * ENOSYS libfuse answers for it tells the kernel to stop sending FLUSH,
 * a round trip less on every close (it still writes its cached pages
 * back first). */
#include "xfuse.h"

void xf_init(void *userdata, struct fuse_conn_info *conn)
{
	xf_fs *x = userdata;

	conn->want &= ~(FUSE_CAP_HANDLE_KILLPRIV | FUSE_CAP_ATOMIC_O_TRUNC |
			FUSE_CAP_READDIRPLUS_AUTO | FUSE_CAP_WRITEBACK_CACHE);
	if (conn->capable & FUSE_CAP_DONT_MASK)
		conn->want |= FUSE_CAP_DONT_MASK;
	if (conn->capable & FUSE_CAP_POSIX_ACL)
		conn->want |= FUSE_CAP_POSIX_ACL;
	if (conn->capable & FUSE_CAP_READDIRPLUS)
		conn->want |= FUSE_CAP_READDIRPLUS;
	/* lsattr and chattr on directories too (ops_ioctl.c) */
	if (conn->capable & FUSE_CAP_IOCTL_DIR)
		conn->want |= FUSE_CAP_IOCTL_DIR;
	/* Lookups and readdirs in one directory run at the same time, as
	 * inode-svc serves them (the kernel serialises them otherwise). */
	if (conn->capable & FUSE_CAP_PARALLEL_DIROPS)
		conn->want |= FUSE_CAP_PARALLEL_DIROPS;
	if (x->cfg.writeback && (conn->capable & FUSE_CAP_WRITEBACK_CACHE))
		conn->want |= FUSE_CAP_WRITEBACK_CACHE;
	/* One request's data fits libext3d's call: 1 MiB at a time. */
	if (conn->max_write > XF_MAX_IO)
		conn->max_write = XF_MAX_IO;
	/* Readahead in requests that large too, where sysfs lets us (bdi.c). */
	if (xf_bdi_readahead(x->bdi, XF_MAX_IO / 1024))
		conn->max_readahead = XF_MAX_IO;
	conn->time_gran = 1;
}

const struct fuse_lowlevel_ops xf_ops = {
	.init = xf_init,
	.lookup = xf_lookup,
	.forget = xf_forget,
	.forget_multi = xf_forget_multi,
	.getattr = xf_getattr,
	.setattr = xf_setattr,
	.readlink = xf_readlink,
	.mknod = xf_mknod,
	.mkdir = xf_mkdir,
	.unlink = xf_unlink,
	.rmdir = xf_rmdir,
	.symlink = xf_symlink,
	.rename = xf_rename,
	.link = xf_link,
	.open = xf_open,
	.read = xf_read,
	.write = xf_write,
	.release = xf_release,
	.fsync = xf_fsync,
	.opendir = xf_opendir,
	.readdir = xf_readdir,
	.releasedir = xf_releasedir,
	.fsyncdir = xf_fsyncdir,
	.statfs = xf_statfs,
	.access = xf_access,
	.create = xf_create,
	.fallocate = xf_fallocate,
	.lseek = xf_lseek,
	.ioctl = xf_ioctl,
	.readdirplus = xf_readdirplus,
	.copy_file_range = xf_copy_file_range,
	.getxattr = xf_getxattr,
	.setxattr = xf_setxattr,
	.listxattr = xf_listxattr,
	.removexattr = xf_removexattr,
};
