/* The seccomp profile, compiled once per process to a BPF program and loaded
 * per cell with one prctl() (async-signal-safe, no libseccomp in the child). */
#ifndef HUTCH_CELL_SECCOMP_H
#define HUTCH_CELL_SECCOMP_H

#include <linux/filter.h>

#include "hutch.h"

struct hutch_seccomp_prog {
	struct sock_fprog fprog;
};

/* The shared, lazily compiled profile. Never freed. NULL + err on failure. */
const struct hutch_seccomp_prog *hutch_seccomp_profile(struct hutch_err *err);

/* Install prog on the calling thread. Requires no_new_privs. Child-safe. */
int hutch_seccomp_load(const struct hutch_seccomp_prog *prog, struct hutch_err *err);

/* The connect watch (cell/connwatch.h): a filter that hands connect() and
 * addressed sendto() to a supervisor. Compiled once, never freed. */
const struct hutch_seccomp_prog *hutch_seccomp_connwatch(struct hutch_err *err);

/* Install prog with a user-notification listener; returns the listener fd
 * (close-on-exec) or -1. Needs CAP_SYS_ADMIN in our user namespace or
 * no_new_privs. Child-safe. */
int hutch_seccomp_load_listener(const struct hutch_seccomp_prog *prog, struct hutch_err *err);

/* Names of the system calls the profile denies (NULL-terminated), for docs
 * and tests. */
extern const char *const hutch_seccomp_denied_names[];

#endif
