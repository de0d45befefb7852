#include <errno.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sys/syscalls.h"

pid_t hutch_sys_clone(unsigned long flags)
{
	/* x86_64 argument order: flags, stack, parent_tid, child_tid, tls. A NULL
	 * stack means "share the caller's stack position", as fork() does. */
	return (pid_t)syscall(SYS_clone, flags | SIGCHLD, NULL, NULL, NULL, NULL);
}

int hutch_sys_pivot_root(const char *new_root, const char *put_old)
{
#ifdef SYS_pivot_root
	return (int)syscall(SYS_pivot_root, new_root, put_old);
#else
	errno = ENOSYS;
	return -1;
#endif
}

int hutch_sys_landlock_create_ruleset(const struct hutch_landlock_ruleset_attr *attr, size_t size,
				      uint32_t flags)
{
#ifdef SYS_landlock_create_ruleset
	return (int)syscall(SYS_landlock_create_ruleset, attr, size, flags);
#else
	errno = ENOSYS;
	return -1;
#endif
}

int hutch_sys_landlock_add_rule(int ruleset_fd, int rule_type, const void *attr, uint32_t flags)
{
#ifdef SYS_landlock_add_rule
	return (int)syscall(SYS_landlock_add_rule, ruleset_fd, rule_type, attr, flags);
#else
	errno = ENOSYS;
	return -1;
#endif
}

int hutch_sys_landlock_restrict_self(int ruleset_fd, uint32_t flags)
{
#ifdef SYS_landlock_restrict_self
	return (int)syscall(SYS_landlock_restrict_self, ruleset_fd, flags);
#else
	errno = ENOSYS;
	return -1;
#endif
}
