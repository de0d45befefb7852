/* Zygotes: a warm interpreter living in a prepared cell, and the children it
 * forks into fresh namespaces — the cell side of the fast path.
 *
 *   daemon ──spawn──> zygote (own mount namespace [+ user namespace when
 *                     rootless], the template's root, privileged in it;
 *                     execs the hutch-zygote binary, which warms Python)
 *
 *   zygote ──clone(new mount, pid, net, ipc, uts namespaces)──> B
 *      B: pid 1 of the new pid namespace; attached to its cgroup by the
 *         zygote; own /proc and writable tmpfs; loopback up; loads seccomp;
 *         forks C, drops every privilege, and reports C's wait status like
 *         a cold init
 *      C: pid 2; drops every privilege, loads landlock, and waits for a
 *         request; then places its files and runs it
 *   The zygote is pid 1 of its own pid namespace: when it dies (with the
 *   daemon: PDEATHSIG), every cell dies with it.
 */
#ifndef HUTCH_CELL_ZYGOTE_H
#define HUTCH_CELL_ZYGOTE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "hutch.h"
#include "cell/seccomp.h"

struct hutch_zygote_spawn {
	bool use_userns;
	uid_t outer_uid;
	gid_t outer_gid;
	int exe_fd;	   /* the zygote program, opened O_PATH by the caller */
	char *const *argv; /* for it */
	char *const *envp; /* for it: nothing of the host's */
	int ctrl_fd;	   /* becomes fd 3 in the zygote */
};

/* Start a zygote. Returns its pid (a child of the caller) and a pidfd in
 * *pidfd, or -1 with err. The zygote dies with the caller (PDEATHSIG). */
pid_t hutch_zygote_spawn(const struct hutch_zygote_spawn *spec, int *pidfd, struct hutch_err *err);

struct hutch_zygote_fork {
	int cgroup_procs_fds[8]; /* cgroup.procs files to attach B to; -1 ends */
	int status_fd;		 /* B writes its struct hutch_cell_report here */
	int chan_fd;		 /* C keeps this; everything else is closed in C */
	uint64_t disk_bytes;	 /* size of the fresh writable tmpfs */
	bool use_userns;
	const struct hutch_seccomp_prog *seccomp; /* for B */
	/* B loads it with a listener and sends the listener on chan_fd ("w"),
	 * with a TCP listener on 127.0.0.1:HUTCH_PROXY_PORT in the new
	 * network namespace (for allow:) */
	const struct hutch_seccomp_prog *connwatch;
};

/* In a zygote: make B and C. Returns B's pid (> 0, in the zygote's pid
 * namespace) in the zygote; returns 0 in C, with every fd but chan_fd and
 * 0-2 closed; -1 with err on failure. The zygote must reap B. */
pid_t hutch_zygote_fork(const struct hutch_zygote_fork *spec, struct hutch_err *err);

/* In C, once its program has ended (its output flushed): exit with rc, but
 * leave the teardown of C's copy of the zygote's address space (~1 ms of
 * page-table work here) to a keeper that shares it, so init sees C's exit,
 * and reports it, without waiting for that. The keeper appears only now,
 * after the program; it holds no fds, ignores every signal it can, and dies
 * with the cell. */
_Noreturn void hutch_zygote_child_exit(int rc);

#endif
