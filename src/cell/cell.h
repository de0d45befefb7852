/* The cell: THE isolation primitive, one isolated process tree.
 *
 * A cell spec is plain data; hutch_cell_spawn() is the one door. Nothing
 * outside src/cell/ calls clone, unshare, mount or seccomp.
 *
 * Shape of a running cell:
 *
 *   supervisor (caller)
 *     └─ init: pid 1 of a new pid namespace; builds the root filesystem,
 *        then forks the program and waits; when the program exits, init
 *        reports its wait status and exits, and the kernel kills everything
 *        else in the namespace (daemons, setsid'ed children) with it.
 *          └─ program: pid 2; unprivileged uid, no capabilities,
 *             no_new_privs, rlimits, landlock, seccomp, then execve.
 */
#ifndef HUTCH_CELL_CELL_H
#define HUTCH_CELL_CELL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "hutch.h"
#include "cell/cgroup.h"
#include "cell/seccomp.h"

/* What a child reports when a step before execve fails; fits one pipe write. */
struct hutch_cell_failure {
	char step[32];
	struct hutch_err err;
};

/* What init tells the supervisor when the program has exited. */
struct hutch_cell_report {
	int wait_status;       /* of the program (pid 2) */
	uint64_t disk_used;    /* bytes used in the writable tmpfs */
	uint64_t cpu_us;       /* user+sys of the program and its waited-for children */
	uint64_t maxrss_bytes; /* largest resident set among them */
};

struct hutch_cell_rlimits {
	uint64_t file_bytes; /* RLIMIT_FSIZE */
	uint64_t cpu_sec;    /* RLIMIT_CPU backstop, 0 = none */
	uint64_t data_bytes; /* RLIMIT_DATA when no memory cgroup, 0 = none */
	uint64_t nproc;	     /* RLIMIT_NPROC when no pids cgroup, 0 = none */
};

/* A destination prefix the cell may not reach (network policy full). */
struct hutch_net_block {
	int family; /* AF_INET or AF_INET6 */
	unsigned char addr[16];
	unsigned char prefix;
};

struct hutch_cell_spec {
	bool use_userns; /* rootless: map our uid/gid to the sandbox ids */
	uid_t outer_uid; /* our ids, for the maps */
	gid_t outer_gid;
	uint64_t disk_bytes;		/* size of the writable tmpfs (/workspace, /tmp) */
	const struct hutch_file *files; /* placed under /workspace */
	size_t nfiles;
	const char *workdir; /* absolute, under /workspace */
	char *const *argv;
	char *const *envp;
	int stdin_fd; /* in the caller; dup'ed to 0 in the program */
	int stdout_fd;
	int stderr_fd;
	struct hutch_cell_rlimits rlimits;
	const struct hutch_cgroup *cgroup; /* may be NULL */
	const struct hutch_seccomp_prog *seccomp;
	/* Sessions: a host directory bound on /workspace over the tmpfs one
	 * (NULL: the tmpfs), and a control socket handed to the program as fd 3. */
	const char *workspace_dir;
	bool has_control_fd;
	int control_fd;
	/* stdin is a terminal (a pty slave): make it the controlling one */
	bool tty;
	/* Network policy allow: init makes a TCP listener on
	 * 127.0.0.1:HUTCH_PROXY_PORT inside the cell's network namespace and
	 * hands it over: spawn stores it here (-1 on failure). NULL: none. */
	int *proxy_fd_out;
	/* The connect watch (cell/connwatch.h): init loads this filter with a
	 * listener before the program starts and hands the listener over:
	 * spawn stores it here (-1 on failure). NULL: no watch. */
	const struct hutch_seccomp_prog *connwatch;
	int *watch_fd_out;
	/* Network policy full: slirp4netns gives the cell a way out (tap0,
	 * cell/slirp.c) and these prefixes get unreachable routes. */
	bool net_full;
	const struct hutch_net_block *blocks;
	size_t nblocks;
};

#define HUTCH_PROXY_PORT 3128

struct hutch_cell {
	pid_t pid;	   /* init, in our pid namespace */
	int pidfd;	   /* of init */
	int report_fd;	   /* read: a hutch_cell_failure, or EOF once the program exec'd */
	int status_fd;	   /* read: a struct hutch_cell_report, written by init */
	pid_t slirp_pid;   /* network full: its slirp4netns (0: none) */
	int slirp_exit_fd; /* closing it ends slirp4netns (when slirp_pid) */
};

/* Network policy full (cell/slirp.c): start slirp4netns for the cell whose
 * init is cell_pid, wait until tap0 is up; cell->slirp_* are set. */
int hutch_slirp_start(pid_t cell_pid, bool userns, struct hutch_cell *cell, struct hutch_err *err);
/* Stop it (idempotent); hutch_cell_reap calls it. */
void hutch_slirp_stop(struct hutch_cell *cell);

/* Create the cell and start the program. On return the program may still
 * be setting up: read report_fd for the outcome of setup. Returns -1 (err
 * filled) when the cell could not even be cloned. */
int hutch_cell_spawn(const struct hutch_cell_spec *spec, struct hutch_cell *cell,
		     struct hutch_err *err);

/* Run one more program inside a running cell, as `docker exec` does: a
 * waiter process joins the cell's cgroup and namespaces (through the pidfd
 * of a process in the cell: target->pidfd) and forks the program, which sets itself up as spec says
 * (ids, capabilities, rlimits, landlock, seccomp; spec's root-building fields are ignored) and
 * execs. out->pid/pidfd are the waiter's (outside the cell's pid namespace), out->status_fd gets
 * its hutch_cell_report when the program exits, *program is the program's pid (its process group)
 * in our pid namespace, for signals. */
int hutch_cell_enter(const struct hutch_cell *target, const struct hutch_cell_spec *spec,
		     struct hutch_cell *out, pid_t *program, struct hutch_err *err);

/* Kill the whole tree (SIGKILL to init; the pid namespace takes the rest). */
void hutch_cell_kill(const struct hutch_cell *cell);

/* Reap init; returns its wait status. Closes the cell's fds. */
int hutch_cell_reap(struct hutch_cell *cell, struct rusage *ru);

/* True when this process can create a cell without a user namespace. */
bool hutch_cell_is_privileged(void);

/* --- shared by the cold cell and the zygote's children (child-only) --- */
/* Write {step, err} to fd and _exit(127). */
_Noreturn void hutch_cell_child_fail(int fd, const char *step, const struct hutch_err *err);
/* The program's own set-up (session, stdio and fd 3, workdir, rlimits,
 * capabilities, landlock, seccomp), then execve; failures go to report_fd. */
_Noreturn void hutch_cell_run_program(const struct hutch_cell_spec *spec, int report_fd);
/* Zero this process's argv and environ strings (/proc/PID/cmdline is
 * world-readable; a copy of a supervisor must not show its arguments). */
void hutch_cell_scrub_args_and_env(void);
/* Default dispositions for every signal and an empty mask. */
void hutch_cell_reset_signals(void);
/* The loop of a pid-1 init: reap everything; when `program` exits, write a
 * struct hutch_cell_report to status_fd and exit. */
_Noreturn void hutch_cell_init_wait(int status_fd, pid_t program);
/* What init and an entered command's waiter do once the program is
 * forked: close every fd but status_fd, drop privileges, load seccomp,
 * re-arm the parent-death signal (the uid change cleared it), then
 * hutch_cell_init_wait. */
_Noreturn void hutch_cell_lock_down_and_wait(const struct hutch_cell_spec *spec, int status_fd,
					     pid_t program);

/* --- steps run inside the child; each returns -1 with err filled --- */
int hutch_ns_write_id_maps(pid_t pid, uid_t outer_uid, gid_t outer_gid, struct hutch_err *err);
int hutch_ns_set_identity(struct hutch_err *err);
int hutch_mount_build_root(const struct hutch_cell_spec *spec, struct hutch_err *err);
int hutch_net_loopback_up(struct hutch_err *err);
int hutch_net_proxy_listen(struct hutch_err *err);
/* Network policy full: "unreachable" routes for these prefixes in the
 * calling process's network namespace (needs CAP_NET_ADMIN there). */
int hutch_net_block(const struct hutch_net_block *blocks, size_t n, struct hutch_err *err);
int hutch_caps_drop_all(bool in_userns, struct hutch_err *err);
int hutch_caps_keep_across_exec(struct hutch_err *err);
int hutch_rlimit_apply(const struct hutch_cell_rlimits *rl, struct hutch_err *err);
int hutch_rlimit_apply_to(pid_t pid, const struct hutch_cell_rlimits *rl, struct hutch_err *err);
int hutch_landlock_apply(struct hutch_err *err);

#endif
