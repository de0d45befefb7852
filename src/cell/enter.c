#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cell/cell.h"
#include "sys/syscalls.h"
#include "util/err.h"
#include "util/fdpass.h"

/*
 * hutch_cell_enter: one more program in a running cell (a session's shell
 * command), the way `docker exec` and `nsenter` do it:
 *
 *   supervisor
 *     └─ waiter: in the cell's cgroup, joins the cell's namespaces through
 *        init's pidfd (stays in our pid namespace itself: setns of a pid
 *        namespace applies to children only), forks the program, drops its
 *        own privileges and waits, then reports like init does.
 *          └─ program: in the cell's pid namespace, set up exactly as the
 *             cell's own program (hutch_cell_run_program), then execve.
 *
 * Pipes as in spawn.c (go, report, status) plus `pid`, a socketpair on which
 * the waiter sends the program's pid so the supervisor can signal its
 * process group, with the connect watch's listener when spec asks for one.
 * Between clone() and execve() only async-signal-safe calls are made.
 */

struct enter_pipes {
	int go[2];
	int report[2];
	int status[2];
	int pid[2];
};

static int enter_flags(const struct hutch_cell_spec *spec)
{
	int flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNET;

	if (spec->use_userns)
		flags |= CLONE_NEWUSER;
	if (spec->cgroup && spec->cgroup->version)
		flags |= CLONE_NEWCGROUP;
	return flags;
}

static _Noreturn void run_waiter(int target_pidfd, const struct hutch_cell_spec *spec,
				 struct enter_pipes *p)
{
	struct hutch_err err = {0, ""};
	pid_t program;
	int wfd = -1;
	char go;

	hutch_cell_reset_signals();
	close(p->go[1]);
	close(p->report[0]);
	close(p->status[0]);
	close(p->pid[0]);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		hutch_cell_child_fail(p->report[1], "pdeathsig",
				      (hutch_err_set(&err, errno, "prctl"), &err));
	if (read(p->go[0], &go, 1) != 1)
		_exit(127); /* the supervisor gave up (or died) */
	close(p->go[0]);
	/* One call joins all of them at once (pidfd setns, Linux 5.8). */
	if (setns(target_pidfd, enter_flags(spec)) < 0)
		hutch_cell_child_fail(
			p->report[1], "setns",
			(hutch_err_set(&err, errno, "join the cell's namespaces"), &err));
	/* joined, still privileged in the cell: the program inherits it */
	if (spec->watch_fd_out && (wfd = hutch_seccomp_load_listener(spec->connwatch, &err)) < 0)
		hutch_cell_child_fail(p->report[1], "connect watch", &err);
	/* raw, as in spawn.c: glibc's fork() could wait on a lock another
	 * thread of the supervisor held when we were cloned */
	program = hutch_sys_clone(0);
	if (program < 0)
		hutch_cell_child_fail(p->report[1], "fork",
				      (hutch_err_set(&err, errno, "fork program"), &err));
	if (program == 0) {
		close(p->status[1]);
		close(p->pid[1]);
		hutch_cell_run_program(spec, p->report[1]);
	}
	(void)hutch_send_fds(p->pid[1], &program, sizeof(program), &wfd, wfd >= 0 ? 1 : 0);
	if (wfd >= 0)
		close(wfd);
	close(p->pid[1]);
	close(p->report[1]);
	/* The waiter is a copy of the supervisor: nothing in the cell can see it
	 * (it is outside the cell's pid namespace), but hold no privilege either. */
	(void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	hutch_cell_lock_down_and_wait(spec, p->status[1], program);
}

static void close_all(struct enter_pipes *p)
{
	int *fds[] = {p->go, p->report, p->status, p->pid};

	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		for (int j = 0; j < 2; j++)
			if (fds[i][j] >= 0) {
				close(fds[i][j]);
				fds[i][j] = -1;
			}
}

int hutch_cell_enter(const struct hutch_cell *target, const struct hutch_cell_spec *spec,
		     struct hutch_cell *out, pid_t *program, struct hutch_err *err)
{
	struct enter_pipes p = {{-1, -1}, {-1, -1}, {-1, -1}, {-1, -1}};
	sigset_t all;
	sigset_t old;
	pid_t pid;
	char go = 'g';

	memset(out, 0, sizeof(*out));
	out->pidfd = out->report_fd = out->status_fd = -1;
	*program = 0;
	if (target->pidfd < 0)
		return hutch_err_setx(err, ESRCH, "the cell is not running");
	if (pipe2(p.go, O_CLOEXEC) < 0 || pipe2(p.report, O_CLOEXEC) < 0 ||
	    pipe2(p.status, O_CLOEXEC) < 0 ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, p.pid) < 0) {
		hutch_err_set(err, errno, "pipe");
		close_all(&p);
		return -1;
	}
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid = hutch_sys_clone(0);
	if (pid == 0)
		run_waiter(target->pidfd, spec, &p);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (pid < 0) {
		hutch_err_set(err, errno, "clone");
		close_all(&p);
		return -1;
	}
	out->pid = pid;
	close(p.go[0]);
	close(p.report[1]);
	close(p.status[1]);
	close(p.pid[1]);
	p.go[0] = p.report[1] = p.status[1] = p.pid[1] = -1;
	out->pidfd = pidfd_open(pid, 0);
	if (out->pidfd < 0) {
		hutch_err_set(err, errno, "pidfd_open");
		goto fail;
	}
	/* before it joins anything: the cgroup namespace it joins is rooted
	 * at the cell's cgroup, and from inside, ours is out of reach */
	if (spec->cgroup && spec->cgroup->version &&
	    hutch_cgroup_attach(spec->cgroup, pid, err) < 0)
		goto fail;
	if (write(p.go[1], &go, 1) != 1) {
		hutch_err_set(err, errno, "start the waiter");
		goto fail;
	}
	/* EOF here: the waiter failed before forking; its report says why */
	int wfd = -1;
	int nfds = 0;
	if (hutch_recv_fds(p.pid[0], program, sizeof(*program), &wfd, 1, &nfds) !=
	    (ssize_t)sizeof(*program))
		*program = 0;
	if (spec->watch_fd_out)
		*spec->watch_fd_out = nfds == 1 ? wfd : -1;
	else if (nfds == 1)
		close(wfd);
	out->report_fd = p.report[0];
	out->status_fd = p.status[0];
	p.report[0] = p.status[0] = -1;
	close_all(&p);
	return 0;

fail:
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	if (out->pidfd >= 0)
		close(out->pidfd);
	out->pidfd = -1;
	out->pid = 0;
	close_all(&p);
	return -1;
}
