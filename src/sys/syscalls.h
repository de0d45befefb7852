/* Raw system calls glibc 2.36 does not wrap. Tier 1: return -1 and set
 * errno, like libc; ENOSYS when this build does not know the call. */
#ifndef HUTCH_SYS_SYSCALLS_H
#define HUTCH_SYS_SYSCALLS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sys/linux-compat.h"

struct landlock_path_beneath_attr;

/* clone(2) without a new stack: returns 0 in the child like fork(). */
pid_t hutch_sys_clone(unsigned long flags);
int hutch_sys_pivot_root(const char *new_root, const char *put_old);
int hutch_sys_landlock_create_ruleset(const struct hutch_landlock_ruleset_attr *attr, size_t size,
				      uint32_t flags);
int hutch_sys_landlock_add_rule(int ruleset_fd, int rule_type, const void *attr, uint32_t flags);
int hutch_sys_landlock_restrict_self(int ruleset_fd, uint32_t flags);

#endif
