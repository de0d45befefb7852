/* Kernel interfaces newer than Debian 12's headers. Each notes the kernel
 * version that added it; use at run time means "ENOSYS/EINVAL -> fall back". */
#ifndef HUTCH_SYS_LINUX_COMPAT_H
#define HUTCH_SYS_LINUX_COMPAT_H

#include <stdint.h>

/* Landlock (5.13); our own copy of the ruleset attr, which grew fields. */
struct hutch_landlock_ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net; /* ABI 4, Linux 6.7 */
	uint64_t scoped;	     /* ABI 6, Linux 6.12 */
};

#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14) /* ABI 3, Linux 6.2 */
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15) /* ABI 5, Linux 6.10 */
#endif
#ifndef LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0) /* ABI 6, Linux 6.12 */
#endif
#ifndef LANDLOCK_SCOPE_SIGNAL
#define LANDLOCK_SCOPE_SIGNAL (1ULL << 1) /* ABI 6, Linux 6.12 */
#endif

#ifndef CLONE_NEWCGROUP
#define CLONE_NEWCGROUP 0x02000000 /* Linux 4.6 */
#endif
#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080 /* Linux 5.6 */
#endif

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

#endif
