/* hutch-zygote: started by the daemon's pool inside a prepared cell (the
 * template's root, its own mount namespace), never by hand.
 *
 *   fd 3    the control socket (SOCK_SEQPACKET): 'F' messages ask for a
 *           child; each answer is a struct hutch_zmsg_forked.
 *   argv    hutch-zygote [PRELOAD_MODULES]   (comma-separated)
 *
 * A child (C in src/cell/zygote.h) waits on its channel for one request,
 * runs it — Python in the warm interpreter, node in the node a node cell
 * started ahead (node.c), anything else by execve — and exits. */
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cell/cell.h"
#include "cell/layer.h"
#include "cell/zygote.h"
#include "run/lang.h"
#include "run/path.h"
#include "run/runner.h"
#include "run/zproto.h"
#include "util/err.h"
#include "util/fdpass.h"
#include "util/mem.h"
#include "zygote/zygote.h"

#define CTRL_FD 3

static const struct hutch_seccomp_prog *seccomp_prog;
static const struct hutch_seccomp_prog *connwatch_prog;

static _Noreturn void fail(int chan, const char *step, struct hutch_err *err)
{
	hutch_cell_child_fail(chan, step, err);
}

static char *read_all(int fd, size_t *len)
{
	struct stat st;
	char *buf;
	size_t done = 0;

	if (fstat(fd, &st) < 0 || st.st_size < 0 || st.st_size > (1ll << 34))
		return NULL;
	buf = hutch_xmalloc((size_t)st.st_size + 1);
	while (done < (size_t)st.st_size) {
		ssize_t n = pread(fd, buf + done, (size_t)st.st_size - done, (off_t)done);
		if (n <= 0) {
			free(buf);
			return NULL;
		}
		done += (size_t)n;
	}
	buf[done] = '\0';
	*len = done;
	return buf;
}

/* At pool time, before the child waits: everything that does not depend on
 * the request — privileges dropped (uid 1000, no capabilities,
 * no_new_privs), landlock and seccomp loaded. What is left for the request
 * needs no privilege: its files go into a workspace the sandbox user owns. */
static void lock_down(int chan)
{
	struct hutch_err err = {0, ""};

	/* uid 0 only when hutch runs as root; a user namespace otherwise */
	if (hutch_caps_drop_all(geteuid() != 0, &err) < 0)
		fail(chan, "capabilities", &err);
	if (hutch_landlock_apply(&err) < 0)
		fail(chan, "landlock", &err);
	/* seccomp: inherited from B, which loaded it before forking us */
}

/* The request's files, and the rlimits it asks for (cpu_extra_sec: CPU
 * time a program started ahead has already used). Returns the working
 * directory in workdir. */
static void place(int chan, const struct hutch_exec_request *req, const struct hutch_zmsg_run *msg,
		  char *workdir, size_t size, struct hutch_cell_rlimits *rl)
{
	struct hutch_err err = {0, ""};
	size_t nfiles = 0;
	struct hutch_file *files = hutch_runner_build_files(req, &nfiles);
	const struct hutch_limits *l = &req->limits;

	*rl = (struct hutch_cell_rlimits){
		.file_bytes = l->file_bytes,
		.cpu_sec = l->cpu_ms ? (l->cpu_ms + 999) / 1000 + (msg->has_cgroup ? 1 : 0) : 0,
		.data_bytes = msg->has_cgroup ? 0 : l->memory_bytes,
		.nproc = msg->has_cgroup ? 0 : l->pids,
	};
	snprintf(workdir, size, "%s", HUTCH_WORKSPACE);
	if (req->workdir)
		(void)hutch_sandbox_path(req->workdir, workdir, size, 1, NULL);
	/* the pool sends only requests for the size the layer was made with */
	if (l->disk_bytes != msg->default_disk)
		fail(chan, "rootfs",
		     (hutch_err_setx(&err, EINVAL, "disk size differs from the pool's"), &err));
	if (hutch_layer_place(HUTCH_WORKSPACE, files, nfiles, workdir, &err) < 0)
		fail(chan, "files", &err);
}

/* The rest of what the cold path's program does before execve. */
static void prepare(int chan, const char *workdir, const struct hutch_cell_rlimits *rl,
		    const int *stdio)
{
	struct hutch_err err = {0, ""};

	if (setsid() < 0)
		fail(chan, "setsid", (hutch_err_set(&err, errno, "setsid"), &err));
	for (int i = 0; i < 3; i++)
		if (dup2(stdio[i], i) < 0)
			fail(chan, "stdio", (hutch_err_set(&err, errno, "dup2"), &err));
	if (chan > 3)
		close_range(3, (unsigned)chan - 1, 0);
	close_range((unsigned)chan + 1, ~0u, 0);
	if (chdir(workdir) < 0)
		fail(chan, "workdir", (hutch_err_set(&err, errno, "chdir '%s'", workdir), &err));
	if (hutch_rlimit_apply(rl, &err) < 0)
		fail(chan, "rlimit", &err);
}

/* A node cell's request, in the node started ahead. Returns when that node
 * does not fit it (node_warm_fits), with the node stopped. */
static void run_warm_node(int chan, struct hutch_node_warm *node, char **argv, char **envp,
			  const char *workdir, struct hutch_cell_rlimits *rl, int stdin_fd)
{
	struct hutch_err err = {0, ""};

	if (!hutch_node_warm_fits(argv, envp, stdin_fd)) {
		hutch_node_warm_stop(node);
		return;
	}
	/* RLIMIT_CPU counts node's start-up too (~0.1 s): one second more */
	if (rl->cpu_sec)
		rl->cpu_sec++;
	if (hutch_rlimit_apply_to(node->pid, rl, &err) < 0)
		fail(chan, "rlimit", &err);
	/* C only waits now: no core of it, whatever it dies of */
	if (hutch_rlimit_apply(rl, &err) < 0)
		fail(chan, "rlimit", &err);
	if (hutch_node_warm_send(node, argv, envp, workdir, &err) < 0)
		fail(chan, "node", &err);
	if (write(chan, "r", 1) != 1)
		_exit(127);
	close_range(0, ~0u, 0);
	node->pidfd = node->ctl = node->out_r = node->out_w = node->err_r = node->err_w = -1;
	hutch_node_warm_wait_exit(node);
}

/* C: one request, then exit. A node cell ('n') starts its node first and
 * hands the pool that node's output pipes with its ready message. */
static _Noreturn void serve_child(int chan, char kind)
{
	struct hutch_zmsg_run msg = {0};
	struct hutch_exec_request req;
	struct hutch_err err = {0, ""};
	struct hutch_node_warm node = {.pid = -1};
	int fds[4];
	int nfds = 0;
	size_t len = 0;
	char *json;

	(void)prctl(PR_SET_NAME, "hutch-cell", 0, 0, 0);
	hutch_cell_scrub_args_and_env();
	lock_down(chan);
	/* ready: the pool hands out only cells that got this far */
	if (kind == HUTCH_CELL_NODE) {
		if (hutch_node_warm_start(&node, &err) < 0)
			fail(chan, "node", &err);
		int out[2] = {node.out_r, node.err_r};
		if (hutch_send_fds(chan, "n", 1, out, 2) < 0)
			_exit(127);
		close(node.out_r);
		close(node.err_r);
		node.out_r = node.err_r = -1;
	} else if (write(chan, "c", 1) != 1) {
		_exit(127);
	}
	/* fds: stdin, stdout, stderr, the request; a node cell's stdout and
	 * stderr are its node's, so it gets only stdin and the request */
	int want = kind == HUTCH_CELL_NODE ? 2 : 4;
	ssize_t n = hutch_recv_fds(chan, &msg, sizeof(msg), fds, 4, &nfds);
	if (n != (ssize_t)sizeof(msg) || msg.cmd != 'R' || nfds != want)
		_exit(127); /* the pool gave up on us */
	int req_fd = fds[want - 1];
	int stdio[3] = {fds[0], want == 4 ? fds[1] : node.out_w, want == 4 ? fds[2] : node.err_w};
	json = read_all(req_fd, &len);
	close(req_fd);
	hutch_request_init(&req);
	if (!json || hutch_request_from_json(&req, json, len, &err) < 0)
		fail(chan, "request", &err);
	free(json);
	char workdir[1100];
	struct hutch_cell_rlimits rl;
	place(chan, &req, &msg, workdir, sizeof(workdir), &rl);
	char **argv = hutch_runner_build_argv(&req);
	char **envp = hutch_runner_build_env(&req);
	if (req.net && strncmp(req.net, "allow:", 6) == 0)
		envp = hutch_proxy_env(envp); /* the pool started the proxy */
	if (node.pid > 0)
		run_warm_node(chan, &node, argv, envp, workdir, &rl, stdio[0]);
	prepare(chan, workdir, &rl, stdio);
	const struct hutch_lang *lang = req.language ? hutch_lang_find(req.language) : NULL;
	if (kind != HUTCH_CELL_NODE && lang && strcmp(lang->name, "python") == 0) {
		/* In the warm interpreter: argv[1] is the placed file. */
		if (write(chan, "r", 1) != 1)
			_exit(127);
		close(chan);
		hutch_zygote_child_exit(hutch_zygote_python_run(argv[1], argv + 2, envp));
	}
	/* Anything else: the prepared cell, a fresh program (the channel is
	 * close-on-exec: EOF tells the pool the program started). Python set
	 * SIGPIPE and SIGXFSZ to "ignore", which execve would pass on. */
	hutch_cell_reset_signals();
	execvpe(argv[0], argv, envp);
	hutch_err_set(&err, errno, "execute '%s'", argv[0]);
	fail(chan, "exec", &err);
}

/* The C side of the warm-up: the request parser and the builders touch the
 * same heap and stack pages a real request will. */
static void warm_c(void)
{
	static const char sample[] =
		"{\"language\":\"python\",\"code\":\"print(1)\",\"env\":{\"A\":\"b\"},"
		"\"limits\":{\"wall_ms\":1000},\"files\":[{\"path\":\"a\",\"content\":\"x\"}]}";
	struct hutch_exec_request req;
	struct hutch_err err;

	hutch_request_init(&req);
	if (hutch_request_from_json(&req, sample, sizeof(sample) - 1, &err) == 0) {
		size_t n = 0;
		char **argv = hutch_runner_build_argv(&req);
		char **envp = hutch_runner_build_env(&req);
		struct hutch_file *files = hutch_runner_build_files(&req, &n);
		for (size_t i = 0; i < n; i++)
			free(files[i].path);
		free(files);
		hutch_runner_free_strv(argv);
		hutch_runner_free_strv(envp);
	}
	hutch_request_release(&req);
}

static void handle_fork(const struct hutch_zmsg_fork *msg, int *fds, int nfds)
{
	struct hutch_zmsg_forked reply = {'P', -1, {0, ""}};
	struct hutch_zygote_fork spec = {.disk_bytes = msg->disk_bytes,
					 .use_userns = geteuid() != 0,
					 .seccomp = seccomp_prog,
					 .connwatch = connwatch_prog};
	pid_t pid = -1;

	for (int i = 0; i < 8; i++)
		spec.cgroup_procs_fds[i] = -1;
	if (nfds < 2 || msg->ncg + 2 != nfds || msg->ncg > 7) {
		hutch_err_setx(&reply.err, EINVAL, "bad fork message");
	} else {
		spec.chan_fd = fds[0];
		spec.status_fd = fds[1];
		for (int i = 0; i < msg->ncg; i++)
			spec.cgroup_procs_fds[i] = fds[2 + i];
		hutch_zygote_python_before_fork();
		pid = hutch_zygote_fork(&spec, &reply.err);
		if (pid == 0) {
			hutch_zygote_python_after_fork(1);
			if (msg->kind != HUTCH_CELL_NODE)
				hutch_zygote_python_warm();
			warm_c();
			serve_child(spec.chan_fd, msg->kind);
		}
		hutch_zygote_python_after_fork(0);
		reply.pid = pid;
	}
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
	(void)hutch_send_fds(CTRL_FD, &reply, sizeof(reply), NULL, 0);
}

int main(int argc, char **argv)
{
	struct hutch_err err = {0, ""};
	char msg[256];

	/* The zygote is never interesting to read: no core, no ptrace. */
	(void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	seccomp_prog = hutch_seccomp_profile(&err);
	if (seccomp_prog)
		connwatch_prog = hutch_seccomp_connwatch(&err);
	if (!seccomp_prog || !connwatch_prog) {
		fprintf(stderr, "hutch-zygote: %s\n", err.msg);
		return 1;
	}
	if (hutch_zygote_python_init(argc > 1 ? argv[1] : "", msg, sizeof(msg)) < 0) {
		fprintf(stderr, "hutch-zygote: %s\n", msg);
		return 1;
	}
	/* Cells (B) are the zygote's children: let the kernel reap them the
	 * moment they exit, so their cgroups can go at once (a zombie would
	 * hold one until our next message). The pool watches them by pidfd. */
	signal(SIGCHLD, SIG_IGN);
	for (;;) {
		struct hutch_zmsg_fork m = {0};
		int fds[HUTCH_ZMSG_MAX_FDS];
		int nfds = 0;
		ssize_t n;

		n = hutch_recv_fds(CTRL_FD, &m, sizeof(m), fds, HUTCH_ZMSG_MAX_FDS, &nfds);
		if (n == 0)
			return 0; /* the pool is gone */
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return 1;
		}
		if (n == (ssize_t)sizeof(m) && m.cmd == 'F') {
			handle_fork(&m, fds, nfds);
		} else {
			for (int i = 0; i < nfds; i++)
				close(fds[i]);
		}
	}
}
