/* sysctl.h - the machine's fs.* sysctls that ext3d mirrors (the kernel's
 * protected_hardlinks, protected_regular, protected_fifos). */
#ifndef CM_SYSCTL_H
#define CM_SYSCTL_H

/* /proc/sys/fs/NAME as a number; dflt when it cannot be read. */
int cm_sysctl_fs(const char *name, int dflt);

#endif
