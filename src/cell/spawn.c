#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cell/cell.h"
#include "sys/syscalls.h"
#include "util/cleanup.h"
#include "util/err.h"
#include "util/fdpass.h"

/*
 * hutch_cell_spawn: the one door into a cell. See cell.h for the shape.
 *
 * Three pipes connect the supervisor and the cell:
 *   go      supervisor -> init: one byte once uid maps and cgroup are set;
 *           EOF means the supervisor died, and init exits.
 *   report  init/program -> supervisor (CLOEXEC): a hutch_cell_failure when a
 *           step fails, or EOF when the program's execve succeeded.
 *   status  init -> supervisor: the program's wait status.
 *
 * The child runs between clone() and execve() in a copy of a possibly
 * multi-threaded process, so it only calls async-signal-safe functions
 * (libuv's process.c and isolate do the same), and the signal mask is
 * blocked around clone() and reset in the child.
 */

struct pipes {
	int go[2];
	int report[2];
	int status[2];
	int handoff[2]; /* a socketpair: init -> supervisor, the proxy's listener and the connect
			   watch's */
};

_Noreturn void hutch_cell_child_fail(int fd, const char *step, const struct hutch_err *err)
{
	struct hutch_cell_failure f;

	memset(&f, 0, sizeof(f));
	snprintf(f.step, sizeof(f.step), "%s", step);
	f.err = *err;
	(void)!write(fd, &f, sizeof(f));
	_exit(127);
}

void hutch_cell_reset_signals(void)
{
	struct sigaction sa;
	sigset_t none;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	for (int sig = 1; sig < NSIG; sig++)
		(void)sigaction(sig, &sa, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

/* Move an fd to one >= 10 (close-on-exec), out of the way of 0-3. */
static int lift_fd(int fd, int report_fd, const char *what)
{
	struct hutch_err err = {0, ""};
	int moved = fcntl(fd, F_DUPFD_CLOEXEC, 10);

	if (moved < 0)
		hutch_cell_child_fail(report_fd, "stdio",
				      (hutch_err_set(&err, errno, "move %s", what), &err));
	return moved;
}

/* stdio on 0-2, the control socket (if any) on 3, the report pipe above. */
static int arrange_fds(const struct hutch_cell_spec *spec, int report_fd)
{
	struct hutch_err err = {0, ""};
	int fds[3] = {spec->stdin_fd, spec->stdout_fd, spec->stderr_fd};
	int ctl = -1;

	report_fd = lift_fd(report_fd, report_fd, "report pipe");
	if (spec->has_control_fd)
		ctl = lift_fd(spec->control_fd, report_fd, "control socket");
	for (int i = 0; i < 3; i++) {
		if (dup2(fds[i], i) < 0)
			hutch_cell_child_fail(report_fd, "stdio",
					      (hutch_err_set(&err, errno, "dup2 fd %d", i), &err));
	}
	if (ctl >= 0 && dup2(ctl, 3) < 0) /* dup2 clears close-on-exec: fd 3 is inherited */
		hutch_cell_child_fail(report_fd, "stdio",
				      (hutch_err_set(&err, errno, "dup2 fd 3"), &err));
	/* Nothing the supervisor holds may leak in: close every fd but 0-2 (3)
	 * and the report pipe (close-on-exec, so gone at execve). */
	close_range(ctl >= 0 ? 4 : 3, (unsigned)report_fd - 1, 0);
	close_range((unsigned)report_fd + 1, ~0u, 0);
	return report_fd;
}

/* The program: pid 2 of the cell (or a process entered into it). */
_Noreturn void hutch_cell_run_program(const struct hutch_cell_spec *spec, int report_fd)
{
	struct hutch_err err = {0, ""};

	/* Its own session: no controlling terminal shared with anything. */
	if (setsid() < 0)
		hutch_cell_child_fail(report_fd, "setsid",
				      (hutch_err_set(&err, errno, "setsid"), &err));
	report_fd = arrange_fds(spec, report_fd);
	/* a new session has no controlling terminal: take the pty as ours, so
	 * job control, ^C and SIGWINCH work for interactive programs */
	if (spec->tty && ioctl(0, TIOCSCTTY, 0) < 0)
		hutch_cell_child_fail(report_fd, "tty",
				      (hutch_err_set(&err, errno, "TIOCSCTTY"), &err));
	if (chdir(spec->workdir ? spec->workdir : HUTCH_WORKSPACE) < 0)
		hutch_cell_child_fail(
			report_fd, "workdir",
			(hutch_err_set(&err, errno, "chdir '%s'", spec->workdir), &err));
	if (hutch_rlimit_apply(&spec->rlimits, &err) < 0)
		hutch_cell_child_fail(report_fd, "rlimit", &err);
	if (hutch_caps_drop_all(spec->use_userns, &err) < 0)
		hutch_cell_child_fail(report_fd, "capabilities", &err);
	if (hutch_landlock_apply(&err) < 0)
		hutch_cell_child_fail(report_fd, "landlock", &err);
	/* Last before execve: the filter also applies to what we still do. */
	if (hutch_seccomp_load(spec->seccomp, &err) < 0)
		hutch_cell_child_fail(report_fd, "seccomp", &err);
	execvpe(spec->argv[0], spec->argv, spec->envp);
	hutch_err_set(&err, errno, "execute '%s'", spec->argv[0]);
	hutch_cell_child_fail(report_fd, "exec", &err);
}

/* Fields 48-51 of /proc/self/stat: where argv and environ strings live. */
void hutch_cell_scrub_args_and_env(void)
{
	char buf[2048];
	unsigned long v[4];
	int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	char *p;
	int field = 2;

	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	p = strrchr(buf, ')'); /* field 2, the command name, may hold anything */
	if (!p)
		return;
	for (; *p && field < 51; p++) {
		if (*p != ' ')
			continue;
		field++;
		if (field >= 48)
			v[field - 48] = strtoul(p + 1, NULL, 10);
	}
	if (field < 51 || v[1] <= v[0] || v[3] <= v[2])
		return;
	memset((void *)v[0], 0, v[1] - v[0]);
	memset((void *)v[2], 0, v[3] - v[2]);
}

/* Reap children until the program exits; report its status; exit. The
 * kernel then kills whatever else lives in the namespace. */
_Noreturn void hutch_cell_init_wait(int status_fd, pid_t program)
{
	struct hutch_cell_report report = {0, 0, 0, 0};
	struct statfs sfs;
	struct rusage ru;
	int status;

	for (;;) {
		pid_t pid = wait4(-1, &status, 0, &ru);
		if (pid == program) {
			report.wait_status = status;
			/* the program's own usage and that of children it waited for */
			report.cpu_us =
				(uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000u +
				(uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
			report.maxrss_bytes = (uint64_t)ru.ru_maxrss * 1024;
			if (statfs(HUTCH_WORKSPACE, &sfs) == 0)
				report.disk_used =
					(uint64_t)(sfs.f_blocks - sfs.f_bfree) * sfs.f_bsize;
			(void)!write(status_fd, &report, sizeof(report));
			_exit(0);
		}
		if (pid < 0 && errno != EINTR)
			_exit(126);
	}
}

/* init: pid 1 of the cell. Never returns. */
static _Noreturn void run_cell(const struct hutch_cell_spec *spec, struct pipes *p)
{
	struct hutch_err err = {0, ""};
	char go;
	pid_t program;

	hutch_cell_reset_signals();
	close(p->go[1]);
	close(p->report[0]);
	close(p->status[0]);
	if (p->handoff[0] >= 0)
		close(p->handoff[0]);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		hutch_cell_child_fail(p->report[1], "pdeathsig",
				      (hutch_err_set(&err, errno, "prctl"), &err));
	if (read(p->go[0], &go, 1) != 1)
		_exit(127); /* supervisor gone or gave up */
	close(p->go[0]);
	if (spec->cgroup && spec->cgroup->version && unshare(CLONE_NEWCGROUP) < 0)
		hutch_cell_child_fail(p->report[1], "cgroupns",
				      (hutch_err_set(&err, errno, "unshare"), &err));
	if (hutch_ns_set_identity(&err) < 0)
		hutch_cell_child_fail(p->report[1], "uts", &err);
	if (hutch_net_loopback_up(&err) < 0 ||
	    (spec->net_full && hutch_net_block(spec->blocks, spec->nblocks, &err) < 0))
		hutch_cell_child_fail(p->report[1], "network", &err);
	if (spec->proxy_fd_out) {
		/* the listener must be in the cell's network namespace, where only
		 * we can make it: made here, handed out, never kept */
		int lfd = hutch_net_proxy_listen(&err);
		if (lfd < 0 || hutch_send_fds(p->handoff[1], "p", 1, &lfd, 1) < 0)
			hutch_cell_child_fail(
				p->report[1], "proxy",
				lfd < 0 ? &err
					: (hutch_err_set(&err, errno, "send listener"), &err));
		close(lfd);
	}
	if (spec->watch_fd_out) {
		/* before the program is forked, so it inherits the filter; the
		 * listener leaves the cell at once (whoever holds it answers) */
		int wfd = hutch_seccomp_load_listener(spec->connwatch, &err);
		if (wfd < 0 || hutch_send_fds(p->handoff[1], "w", 1, &wfd, 1) < 0)
			hutch_cell_child_fail(
				p->report[1], "connect watch",
				wfd < 0 ? &err
					: (hutch_err_set(&err, errno, "send listener"), &err));
		close(wfd);
	}
	if (p->handoff[1] >= 0)
		close(p->handoff[1]);
	if (hutch_mount_build_root(spec, &err) < 0)
		hutch_cell_child_fail(p->report[1], "rootfs", &err);
	/* Not glibc's fork(): we are a raw clone() of a process that may have
	 * other threads, and fork() takes malloc's and stdio's locks, which
	 * one of those threads may have held at the moment we were cloned
	 * (they never unlock here: init hung, ~1 run in 50 under parallel
	 * load). The raw system call takes no lock. */
	program = hutch_sys_clone(0);
	if (program < 0)
		hutch_cell_child_fail(p->report[1], "fork",
				      (hutch_err_set(&err, errno, "fork program"), &err));
	if (program == 0) {
		close(p->status[1]);
		hutch_cell_run_program(spec, p->report[1]);
	}
	close(p->report[1]);
	/* init is a copy of the supervisor: its memory holds the host's
	 * environment and whatever else the supervisor had. Non-dumpable makes
	 * /proc/1/mem, environ and friends unreadable even to the same uid (in
	 * a user namespace our uid does not change, so the kernel would not
	 * clear the flag itself); and the argv/environ strings are wiped
	 * because /proc/1/cmdline is readable by anyone. */
	(void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	(void)prctl(PR_SET_NAME, "hutch-init", 0, 0, 0);
	hutch_cell_scrub_args_and_env();
	hutch_cell_lock_down_and_wait(spec, p->status[1], program);
}

_Noreturn void hutch_cell_lock_down_and_wait(const struct hutch_cell_spec *spec, int status_fd,
					     pid_t program)
{
	struct hutch_err err = {0, ""};

	/* hold nothing but the status pipe, and no privilege */
	if (status_fd > 0)
		close_range(0, (unsigned)status_fd - 1, 0);
	close_range((unsigned)status_fd + 1, ~0u, 0);
	if (hutch_caps_drop_all(spec->use_userns, &err) < 0 ||
	    hutch_seccomp_load(spec->seccomp, &err) < 0)
		_exit(126);
	/* Changing uid cleared the parent-death signal (prctl(2)): arm it
	 * again, then make sure the supervisor did not die in between. The
	 * write end of a pipe polls POLLERR once its reader is gone. */
	struct pollfd pfd = {status_fd, POLLOUT, 0};
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || poll(&pfd, 1, 0) < 0 ||
	    (pfd.revents & (POLLERR | POLLHUP)))
		_exit(126);
	hutch_cell_init_wait(status_fd, program);
}

static void close_pair(int fds[2])
{
	for (int i = 0; i < 2; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
		fds[i] = -1;
	}
}

/* One fd init handed over, or -1. */
static int recv_handoff(int sock)
{
	int fd = -1;
	int nfds = 0;
	char c = 0;

	if (hutch_recv_fds(sock, &c, 1, &fd, 1, &nfds) <= 0 || nfds != 1)
		return -1;
	return fd;
}

static unsigned long clone_flags(const struct hutch_cell_spec *spec)
{
	/* DESIGN.md isolation defaults: every namespace; user only when we are
	 * not root (as root, the program runs as an unprivileged uid instead). */
	unsigned long flags =
		CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNET;

	if (spec->use_userns)
		flags |= CLONE_NEWUSER;
	return flags;
}

int hutch_cell_spawn(const struct hutch_cell_spec *spec, struct hutch_cell *cell,
		     struct hutch_err *err)
{
	struct pipes p = {{-1, -1}, {-1, -1}, {-1, -1}, {-1, -1}};
	sigset_t all;
	sigset_t old;
	pid_t pid;
	char go = 'g';

	memset(cell, 0, sizeof(*cell));
	cell->pidfd = cell->report_fd = cell->status_fd = -1;
	if (pipe2(p.go, O_CLOEXEC) < 0 || pipe2(p.report, O_CLOEXEC) < 0 ||
	    pipe2(p.status, O_CLOEXEC) < 0 ||
	    ((spec->proxy_fd_out || spec->watch_fd_out) &&
	     socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, p.handoff) < 0)) {
		hutch_err_set(err, errno, "pipe");
		goto out_close;
	}
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid = hutch_sys_clone(clone_flags(spec));
	if (pid == 0)
		run_cell(spec, &p);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (pid < 0) {
		hutch_err_set(err, errno, "clone");
		goto out_close;
	}
	cell->pid = pid;
	close(p.go[0]);
	close(p.report[1]);
	close(p.status[1]);
	p.go[0] = p.report[1] = p.status[1] = -1;
	if (p.handoff[1] >= 0)
		close(p.handoff[1]);
	p.handoff[1] = -1;
	cell->pidfd = pidfd_open(pid, 0);
	if (cell->pidfd < 0) {
		hutch_err_set(err, errno, "pidfd_open");
		goto out_kill;
	}
	if (spec->use_userns &&
	    hutch_ns_write_id_maps(pid, spec->outer_uid, spec->outer_gid, err) < 0)
		goto out_kill;
	if (spec->cgroup && spec->cgroup->version &&
	    hutch_cgroup_attach(spec->cgroup, pid, err) < 0)
		goto out_kill;
	if (spec->net_full && hutch_slirp_start(pid, spec->use_userns, cell, err) < 0)
		goto out_kill;
	if (write(p.go[1], &go, 1) != 1) {
		hutch_err_set(err, errno, "start cell");
		goto out_kill;
	}
	close(p.go[1]);
	cell->report_fd = p.report[0];
	cell->status_fd = p.status[0];
	/* in init's order; EOF instead: init failed first, its report says why */
	if (spec->proxy_fd_out)
		*spec->proxy_fd_out = recv_handoff(p.handoff[0]);
	if (spec->watch_fd_out)
		*spec->watch_fd_out = recv_handoff(p.handoff[0]);
	close_pair(p.handoff);
	return 0;

out_kill:
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	cell->pid = 0;
	hutch_slirp_stop(cell);
	if (cell->pidfd >= 0)
		close(cell->pidfd);
	cell->pidfd = -1;
out_close:
	close_pair(p.go);
	close_pair(p.report);
	close_pair(p.status);
	close_pair(p.handoff);
	return -1;
}

void hutch_cell_kill(const struct hutch_cell *cell)
{
	if (cell->pidfd >= 0)
		(void)pidfd_send_signal(cell->pidfd, SIGKILL, NULL, 0);
	else if (cell->pid > 0)
		kill(cell->pid, SIGKILL);
}

int hutch_cell_reap(struct hutch_cell *cell, struct rusage *ru)
{
	int status = 0;

	if (cell->pid > 0) {
		while (wait4(cell->pid, &status, 0, ru) < 0 && errno == EINTR)
			;
	}
	cell->pid = 0;
	hutch_slirp_stop(cell);
	if (cell->pidfd >= 0)
		close(cell->pidfd);
	if (cell->report_fd >= 0)
		close(cell->report_fd);
	if (cell->status_fd >= 0)
		close(cell->status_fd);
	cell->pidfd = cell->report_fd = cell->status_fd = -1;
	return status;
}

bool hutch_cell_is_privileged(void)
{
	return geteuid() == 0;
}
