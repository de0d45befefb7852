#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cell/cell.h"
#include "util/err.h"

/*
 * Network policy full, the way out: slirp4netns (Debian's slirp4netns), a
 * user-mode TCP/IP stack. It joins the cell's network namespace, creates
 * tap0 there (10.0.2.100/24, gateway 10.0.2.2, DNS 10.0.2.3) and turns the
 * cell's packets into ordinary sockets of its own on the host. Why it and
 * not veth + nftables as root: one mechanism for root and rootless, no
 * change to the host's firewall, routes or forwarding, and nothing to leak
 * when hutch dies (it exits with its exit fd). Its costs, ~10 ms to start
 * and user-space copying, only apply to runs that asked for full.
 *
 * --disable-host-loopback keeps the host's 127.0.0.1 out of reach through
 * the gateway; the cell's unreachable routes (hutch_net_block) keep the
 * rest of what must stay private out. Nothing reaches in: slirp forwards no
 * ports unless asked through its API socket, which we do not open.
 */

#define SLIRP_READY_MS 5000

static const char *slirp_path(void)
{
	static const char *const candidates[] = {"/usr/bin/slirp4netns",
						 "/usr/local/bin/slirp4netns"};
	const char *env = getenv("HUTCH_SLIRP4NETNS");

	if (env && *env)
		return env;
	for (size_t i = 0; i < sizeof(candidates) / sizeof(candidates[0]); i++)
		if (access(candidates[i], X_OK) == 0)
			return candidates[i];
	return NULL;
}

/* In the forked child: /dev/null on 0-2 (it chats on stdout, which may be
 * our caller's JSON), fds 3 (ready) and 4 (exit), nothing else. */
static _Noreturn void exec_slirp(const char *path, char *const *argv, int ready_w, int exit_r,
				 int devnull)
{
	char *const envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL};

	/* move all above 4 first, so the dup2s below cannot clobber them */
	int r = fcntl(ready_w, F_DUPFD, 10);
	int e = fcntl(exit_r, F_DUPFD, 10);
	int z = fcntl(devnull, F_DUPFD, 10);
	if (r < 0 || e < 0 || z < 0 || dup2(z, 0) < 0 || dup2(z, 1) < 0 || dup2(z, 2) < 0 ||
	    dup2(r, 3) < 0 || dup2(e, 4) < 0)
		_exit(127);
	close_range(5, ~0u, 0);
	(void)setsid(); /* a ^C at the terminal is not for it */
	execve(path, argv, envp);
	_exit(127);
}

int hutch_slirp_start(pid_t cell_pid, bool userns, struct hutch_cell *cell, struct hutch_err *err)
{
	const char *path = slirp_path();
	int ready[2] = {-1, -1};
	int exitp[2] = {-1, -1};
	char pid_arg[16];
	char userns_arg[64];
	char *argv[12];
	int n = 0;
	char c = 0;

	if (!path)
		return hutch_err_setx(err, ENOENT,
				      "network 'full' needs slirp4netns (apt-get install "
				      "slirp4netns), or HUTCH_SLIRP4NETNS naming it");
	snprintf(pid_arg, sizeof(pid_arg), "%d", (int)cell_pid);
	snprintf(userns_arg, sizeof(userns_arg), "--userns-path=/proc/%d/ns/user", (int)cell_pid);
	argv[n++] = "slirp4netns";
	argv[n++] = "--configure";
	argv[n++] = "--mtu=65520";
	argv[n++] = "--disable-host-loopback";
	argv[n++] = "--ready-fd=3";
	argv[n++] = "--exit-fd=4";
	argv[n++] = "--enable-seccomp";
	if (userns)
		argv[n++] = userns_arg;
	argv[n++] = pid_arg;
	argv[n++] = "tap0";
	argv[n] = NULL;
	if (pipe2(ready, O_CLOEXEC) < 0 || pipe2(exitp, O_CLOEXEC) < 0) {
		hutch_err_set(err, errno, "pipe");
		goto fail;
	}
	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	pid_t pid = devnull < 0 ? -1 : fork();
	if (pid < 0) {
		hutch_err_set(err, errno, "fork slirp4netns");
		if (devnull >= 0)
			close(devnull);
		goto fail;
	}
	if (pid == 0)
		exec_slirp(path, argv, ready[1], exitp[0], devnull);
	close(devnull);
	close(ready[1]);
	close(exitp[0]);
	ready[1] = exitp[0] = -1;
	cell->slirp_pid = pid;
	cell->slirp_exit_fd = exitp[1];
	exitp[1] = -1;
	struct pollfd pfd = {ready[0], POLLIN, 0};
	if (poll(&pfd, 1, SLIRP_READY_MS) != 1 || read(ready[0], &c, 1) != 1) {
		hutch_slirp_stop(cell);
		hutch_err_setx(err, EIO, "slirp4netns did not get the cell's network ready");
		goto fail;
	}
	close(ready[0]);
	return 0;

fail:
	for (int i = 0; i < 2; i++) {
		if (ready[i] >= 0)
			close(ready[i]);
		if (exitp[i] >= 0)
			close(exitp[i]);
	}
	return -1;
}

void hutch_slirp_stop(struct hutch_cell *cell)
{
	if (cell->slirp_pid <= 0)
		return;
	close(cell->slirp_exit_fd); /* its cue to exit */
	kill(cell->slirp_pid, SIGKILL);
	while (waitpid(cell->slirp_pid, NULL, 0) < 0 && errno == EINTR)
		;
	cell->slirp_pid = 0;
	cell->slirp_exit_fd = -1;
}
