/*
 * The warm node of a node cell. A running node cannot be forked (V8's
 * platform threads and libuv's pool do not survive fork), so the zygote
 * cannot keep one warm the way it keeps Python. Instead a node cell (C, at
 * pool time, after lock_down) starts its own node, which loads
 * kernels/node_warm.js with -r and blocks in it until the request comes.
 * Node's start-up (~50 ms here) is then paid in the background; a request
 * costs what the program itself does.
 *
 * Node gets, at its start, what the program will have: stdout and stderr
 * are pipes whose read ends the pool hands to the engine (no relay), stdin
 * becomes /dev/null, and its credentials, seccomp filter and landlock rules
 * are C's, already locked down. C stays its parent: it places the request's
 * files, sets the request's rlimits on it (prlimit), sends it argv, the
 * environment and the working directory, then waits for it and exits as
 * it did, so init reports node's own status.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cell/cell.h"
#include "cell/zygote.h"
#include "run/runner.h"
#include "util/err.h"
#include "util/io.h"
#include "zygote/zygote.h"

/* kernels/node_warm.js, embedded (src/zygote/node_warm_src.S) */
extern const char hutch_zygote_node_warm_src[];

#define WARM_PATH "/tmp/.hutch-node-warm.js"
/* what the runner gives node for a language request (hutch_runner_build_argv) */
static char main_path[] = HUTCH_WORKSPACE "/main.js";
/* how long node may take to start before the cell gives up on it */
#define START_TIMEOUT_MS 20000

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static int write_preload(struct hutch_err *err)
{
	int fd = open(WARM_PATH, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

	if (fd < 0)
		return hutch_err_set(err, errno, "create " WARM_PATH);
	int rc =
		hutch_write_all(fd, hutch_zygote_node_warm_src, strlen(hutch_zygote_node_warm_src));
	if (rc < 0)
		hutch_err_set(err, errno, "write " WARM_PATH);
	close(fd);
	return rc;
}

/* The node child: stdio, its own session (as the cold path's program is
 * after setsid), and node, with the environment a request without env of
 * its own gets (hutch_runner_build_env). */
static _Noreturn void exec_node(int ctl_r, int out_w, int err_w, char **envp)
{
	char *argv[] = {"node", "-r", WARM_PATH, main_path, NULL};

	if (setsid() < 0 || dup2(ctl_r, 0) < 0 || dup2(out_w, 1) < 0 || dup2(err_w, 2) < 0 ||
	    chdir(HUTCH_WORKSPACE) < 0)
		_exit(127);
	close_range(3, ~0u, 0);
	hutch_cell_reset_signals();
	execvpe(argv[0], argv, envp);
	_exit(127);
}

/* Until node has written its ready byte, or died, or taken too long. */
static int wait_started(struct hutch_node_warm *w, struct hutch_err *err)
{
	struct pollfd pfd[2] = {{w->out_r, POLLIN, 0}, {w->pidfd, POLLIN, 0}};
	char c = 0;

	for (;;) {
		int n = poll(pfd, 2, START_TIMEOUT_MS);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return hutch_err_setx(err, ETIMEDOUT, "node did not start");
		if (pfd[0].revents && read(w->out_r, &c, 1) == 1 && c == 'n')
			return 0;
		return hutch_err_setx(err, ECHILD, "node did not start (is it in the template?)");
	}
}

int hutch_node_warm_start(struct hutch_node_warm *w, struct hutch_err *err)
{
	int ctl[2] = {-1, -1};
	int out[2] = {-1, -1};
	int errp[2] = {-1, -1};
	struct hutch_exec_request none;

	w->pid = -1;
	w->pidfd = w->ctl = w->out_r = w->out_w = w->err_r = w->err_w = -1;
	if (write_preload(err) < 0)
		return -1;
	if (pipe2(ctl, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
		hutch_err_set(err, errno, "pipe");
		goto fail;
	}
	hutch_request_init(&none);
	char **envp = hutch_runner_build_env(&none);
	w->pid = fork();
	if (w->pid == 0)
		exec_node(ctl[0], out[1], errp[1], envp);
	hutch_runner_free_strv(envp);
	if (w->pid < 0) {
		hutch_err_set(err, errno, "fork node");
		goto fail;
	}
	close_fd(&ctl[0]);
	w->ctl = ctl[1];
	w->out_r = out[0];
	w->out_w = out[1];
	w->err_r = errp[0];
	w->err_w = errp[1];
	w->pidfd = pidfd_open(w->pid, 0);
	if (w->pidfd < 0) {
		hutch_err_set(err, errno, "pidfd_open node");
		hutch_node_warm_stop(w);
		return -1;
	}
	if (wait_started(w, err) < 0) {
		hutch_node_warm_stop(w);
		return -1;
	}
	return 0;
fail:
	for (int i = 0; i < 2; i++) {
		close_fd(&ctl[i]);
		close_fd(&out[i]);
		close_fd(&errp[i]);
	}
	(void)unlink(WARM_PATH);
	return -1;
}

void hutch_node_warm_stop(struct hutch_node_warm *w)
{
	if (w->pid > 0) {
		kill(w->pid, SIGKILL);
		while (waitpid(w->pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	w->pid = -1;
	(void)unlink(WARM_PATH); /* if node died before it removed it */
	close_fd(&w->pidfd);
	close_fd(&w->ctl);
	close_fd(&w->out_r);
	close_fd(&w->err_r);
	/* out_w and err_w stay: whatever C runs instead writes to them */
}

/* Variables node reads while it starts (module paths, ICU's locale and
 * zone, OpenSSL's configuration, its own options): a request must leave
 * them as the started node had them. */
static bool read_at_start(const char *kv)
{
	static const char *const prefixes[] = {"NODE_", "UV_", "OPENSSL_", "SSL_", "LC_"};
	static const char *const names[] = {"HOME=", "LANG=", "LANGUAGE=", "TZ="};

	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (strncmp(kv, prefixes[i], strlen(prefixes[i])) == 0)
			return true;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strncmp(kv, names[i], strlen(names[i])) == 0)
			return true;
	return false;
}

static bool in_env(char *const *env, const char *kv)
{
	for (size_t i = 0; env[i]; i++)
		if (strcmp(env[i], kv) == 0)
			return true;
	return false;
}

bool hutch_node_warm_fits(char *const *argv, char *const *envp, int stdin_fd)
{
	struct hutch_exec_request none;
	struct stat st;
	bool fits = true;

	/* `node /workspace/main.js ARGS`, as the started node was told */
	if (!argv[0] || strcmp(argv[0], "node") != 0 || !argv[1] || strcmp(argv[1], main_path) != 0)
		return false;
	/* no stdin: /dev/null, which node_warm.js reopens */
	if (fstat(stdin_fd, &st) < 0 || !S_ISCHR(st.st_mode) || st.st_rdev != makedev(1, 3))
		return false;
	hutch_request_init(&none);
	char **start_env = hutch_runner_build_env(&none);
	for (size_t i = 0; fits && envp[i]; i++)
		fits = !read_at_start(envp[i]) || in_env(start_env, envp[i]);
	for (size_t i = 0; fits && start_env[i]; i++)
		fits = !read_at_start(start_env[i]) || in_env(envp, start_env[i]);
	hutch_runner_free_strv(start_env);
	return fits;
}

static json_t *str_array(char *const *v)
{
	json_t *a = json_array();

	for (size_t i = 0; v && v[i]; i++)
		json_array_append_new(a, json_string(v[i]));
	return a;
}

int hutch_node_warm_send(struct hutch_node_warm *w, char *const *argv, char *const *envp,
			 const char *cwd, struct hutch_err *err)
{
	json_t *msg = json_pack("{s:o, s:o, s:s}", "args", str_array(argv + 2), "env",
				str_array(envp), "cwd", cwd);
	char *text = msg ? json_dumps(msg, JSON_COMPACT) : NULL;
	int rc = 0;

	json_decref(msg);
	if (!text)
		/* argv and env came from the request's JSON: UTF-8 already */
		return hutch_err_setx(err, EINVAL, "request for node: cannot encode it");
	/* node reads to EOF: one message, then the pipe closes */
	if (hutch_write_all(w->ctl, text, strlen(text)) < 0)
		rc = hutch_err_set(err, errno, "hand the request to node");
	free(text);
	close_fd(&w->ctl);
	return rc;
}

_Noreturn void hutch_node_warm_wait_exit(struct hutch_node_warm *w)
{
	int status = 0;

	while (waitpid(w->pid, &status, 0) < 0)
		if (errno != EINTR)
			_exit(127);
	if (WIFSIGNALED(status)) {
		/* die of the same signal, so init reports what node got */
		int sig = WTERMSIG(status);
		hutch_cell_reset_signals();
		kill(getpid(), sig);
		_exit(128 + sig);
	}
	hutch_zygote_child_exit(WEXITSTATUS(status));
}
