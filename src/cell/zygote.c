#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cell/cell.h"
#include "cell/layer.h"
#include "cell/zygote.h"
#include "sys/syscalls.h"
#include "util/err.h"
#include "util/fdpass.h"

/* See zygote.h for the shape. Everything between fork and exec or _exit is
 * child-only code: async-signal-safe calls, no malloc. */

static _Noreturn void zygote_child(const struct hutch_zygote_spawn *spec, int go_fd)
{
	struct hutch_err err = {0, ""};
	struct hutch_cell_spec root = {.disk_bytes = 64 << 10, .workdir = HUTCH_WORKSPACE};
	char go;

	hutch_cell_reset_signals();
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || read(go_fd, &go, 1) != 1)
		_exit(127);
	close(go_fd);
	/* The template's root, as a cold cell gets it; the zygote's own
	 * writable layer stays empty (each child gets a fresh one). */
	if (hutch_mount_build_root(&root, &err) < 0 ||
	    (spec->use_userns && hutch_caps_keep_across_exec(&err) < 0)) {
		(void)!write(2, err.msg, strnlen(err.msg, sizeof(err.msg)));
		_exit(127);
	}
	/* fd 3: the control socket; fd 4: the program, for execveat; no other
	 * fd of the daemon's enters. Moved high first so none clobbers another. */
	int ctrl = fcntl(spec->ctrl_fd, F_DUPFD, 10);
	int exe = fcntl(spec->exe_fd, F_DUPFD, 10);
	if (ctrl < 0 || exe < 0 || dup2(ctrl, 3) < 0 || dup2(exe, 4) < 0)
		_exit(127);
	close_range(5, ~0u, 0);
	syscall(SYS_execveat, 4, "", spec->argv, spec->envp, AT_EMPTY_PATH);
	_exit(127);
}

pid_t hutch_zygote_spawn(const struct hutch_zygote_spawn *spec, int *pidfd, struct hutch_err *err)
{
	/* Its own pid namespace too: procfs may only be mounted (for the root
	 * it builds) by a namespace's owner, and when the zygote dies, every
	 * process it made dies with it. Pids it reports are in its namespace,
	 * so cells announce themselves to the pool instead (SCM_CREDENTIALS
	 * pids are translated by the kernel). */
	unsigned long flags = CLONE_NEWNS | CLONE_NEWPID | (spec->use_userns ? CLONE_NEWUSER : 0);
	int go[2];
	pid_t pid;
	sigset_t all;
	sigset_t old;
	char c = 'g';

	if (pipe2(go, O_CLOEXEC) < 0)
		return hutch_err_set(err, errno, "pipe");
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid = hutch_sys_clone(flags);
	if (pid == 0) {
		close(go[1]);
		zygote_child(spec, go[0]);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	close(go[0]);
	if (pid < 0) {
		close(go[1]);
		return hutch_err_set(err, errno, "clone zygote");
	}
	*pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if ((spec->use_userns &&
	     hutch_ns_write_id_maps(pid, spec->outer_uid, spec->outer_gid, err) < 0) ||
	    write(go[1], &c, 1) != 1) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		close(go[1]);
		if (*pidfd >= 0)
			close(*pidfd);
		return err->code ? -1 : hutch_err_set(err, errno, "start zygote");
	}
	close(go[1]);
	return pid;
}

/* Keep only the fds in keep[] (and 0-2): the rest go. */
static void close_all_but(const int *keep, int n)
{
	int lo = 3;

	for (;;) {
		int next = -1;
		for (int i = 0; i < n; i++)
			if (keep[i] >= lo && (next < 0 || keep[i] < next))
				next = keep[i];
		if (next < 0) {
			close_range((unsigned)lo, ~0u, 0);
			return;
		}
		if (next > lo)
			close_range((unsigned)lo, (unsigned)next - 1, 0);
		lo = next + 1;
	}
}

/* B: pid 1 of the child's pid namespace. Never returns (C returns 0). */
static pid_t run_b(const struct hutch_zygote_fork *spec, int go_fd, struct hutch_err *err)
{
	char go;
	pid_t c;

	/* Wait until the zygote has attached us to our cgroup. The zygote is
	 * pid 1 of its own namespace: if it dies, so do we, with everything
	 * in ours (no parent-death signal needed). */
	if (read(go_fd, &go, 1) != 1)
		_exit(127);
	close(go_fd);
	/* the zygote ignores SIGCHLD (the kernel reaps its cells at once); we
	 * and what we run must get exit statuses (wait4, subprocess) */
	struct sigaction dfl;
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	(void)sigaction(SIGCHLD, &dfl, NULL);
	/* our cgroup becomes the root of our view */
	if (spec->cgroup_procs_fds[0] >= 0 && unshare(CLONE_NEWCGROUP) < 0)
		hutch_cell_child_fail(spec->status_fd, "cgroupns",
				      (hutch_err_set(err, errno, "unshare"), err));
	if (hutch_layer_proc("/proc", err) < 0 ||
	    hutch_layer_writable("", "/run", spec->disk_bytes, err) < 0 ||
	    umount2("/run", MNT_DETACH) < 0 || hutch_net_loopback_up(err) < 0 ||
	    hutch_ns_set_identity(err) < 0)
		_exit(127); /* the pool sees the channel close: the cell is not made */
	/* tell the pool who we are: it gets our pid in its own namespace */
	if (write(spec->chan_fd, "b", 1) != 1)
		_exit(127);
	/* The filter, once, for B and for C (inherited over fork): loading it
	 * is the dearest step of a cell (the kernel compiles the program). B
	 * still holds CAP_SYS_ADMIN, which allows it without no_new_privs. */
	if (hutch_seccomp_load(spec->seccomp, err) < 0)
		_exit(127);
	/* the connect watch: C inherits the filter, the pool gets the
	 * listener (cell/connwatch.h); and a listener for allow:'s proxy in
	 * this network namespace, which the pool closes for none */
	int hand[2] = {hutch_seccomp_load_listener(spec->connwatch, err),
		       hutch_net_proxy_listen(err)};
	if (hand[0] < 0 || hand[1] < 0 || hutch_send_fds(spec->chan_fd, "w", 1, hand, 2) < 0)
		_exit(127);
	close(hand[0]);
	close(hand[1]);
	c = fork();
	if (c < 0)
		_exit(127);
	if (c == 0) {
		int keep[] = {spec->chan_fd};
		close_all_but(keep, 1);
		return 0;
	}
	int keep[] = {spec->status_fd};
	close_all_but(keep, 1);
	(void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	(void)prctl(PR_SET_NAME, "hutch-init", 0, 0, 0);
	hutch_cell_scrub_args_and_env();
	if (hutch_caps_drop_all(spec->use_userns, err) < 0)
		_exit(126);
	hutch_cell_init_wait(spec->status_fd, c);
}

pid_t hutch_zygote_fork(const struct hutch_zygote_fork *spec, struct hutch_err *err)
{
	/* B is cloned straight into its new namespaces: one process fewer per
	 * cell than unshare + fork (and fork is dear here). */
	unsigned long flags =
		CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS;
	char num[24];
	int go[2];
	pid_t b;

	if (pipe2(go, O_CLOEXEC) < 0)
		return hutch_err_set(err, errno, "pipe");
	b = hutch_sys_clone(flags);
	if (b < 0) {
		close(go[0]);
		close(go[1]);
		return hutch_err_set(err, errno, "clone cell");
	}
	if (b == 0) {
		close(go[1]);
		if (run_b(spec, go[0], err) == 0)
			return 0; /* C: back to the zygote's code, to await a request */
		_exit(127);
	}
	close(go[0]);
	int n = snprintf(num, sizeof(num), "%d", b);
	for (int i = 0; i < 8 && spec->cgroup_procs_fds[i] >= 0; i++) {
		if (write(spec->cgroup_procs_fds[i], num, (size_t)n) != n) {
			hutch_err_set(err, errno, "attach cell to its cgroup");
			kill(b, SIGKILL);
			close(go[1]);
			return -1;
		}
	}
	if (write(go[1], "g", 1) != 1) {
		hutch_err_set(err, errno, "start cell");
		close(go[1]);
		return -1;
	}
	close(go[1]);
	return b;
}

/* The keeper: shares C's memory (CLONE_VM), so C's exit is not the last
 * use of it. Runs on its own small stack; waits for the SIGKILL the end of
 * the cell brings. */
static int keeper(void *arg)
{
	sigset_t all;

	(void)arg;
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	close_range(0, ~0u, 0);
	while (pause() < 0)
		;
	return 0;
}

_Noreturn void hutch_zygote_child_exit(int rc)
{
	static char stack[16384] __attribute__((aligned(16)));

	/* the output pipes must reach EOF with C's exit: the keeper gets a
	 * copy of the fd table at clone and closes it, but not before C has
	 * gone, perhaps */
	for (int fd = 0; fd < 3; fd++)
		close(fd);
	/* its parent is init (CLONE_PARENT), which reaps it like any orphan;
	 * if the clone fails, C simply exits the slow way */
	(void)clone(keeper, stack + sizeof(stack), CLONE_VM | CLONE_PARENT, NULL);
	_exit(rc);
}
