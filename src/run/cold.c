#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cell/cell.h"
#include "run/engine.h"
#include "run/netpolicy.h"
#include "run/netwatch.h"
#include "run/path.h"
#include "run/proxy.h"
#include "run/runner.h"
#include "util/err.h"

/*
 * The cold path: one request, one fresh cell built from nothing —
 * clone into new namespaces, the template's root, privileges dropped,
 * execve. See engine.c for the phases.
 */

static pthread_once_t sweep_once = PTHREAD_ONCE_INIT;

void hutch_sweep_stale(void)
{
	hutch_cgroup_sweep();
}

/* Acquire the cgroup; on failure the result says sandbox_error. */
static int acquire(struct hutch_engine *c)
{
	char name[96];
	char note[160] = "";
	struct hutch_err e;

	snprintf(name, sizeof(name), "%d.%s", getpid(), c->res->id);
	if (hutch_cgroup_create(&c->cg, name, &c->req->limits, note, sizeof(note), &e) < 0) {
		hutch_engine_fail(c->res, "cgroup", &e);
		return -1;
	}
	hutch_engine_fill_enforced(c, note);
	return 0;
}

static int start(struct hutch_engine *c, int stdin_fd, int out_w, int err_w, struct hutch_err *err)
{
	const struct hutch_exec_request *req = c->req;
	char **argv = hutch_runner_build_argv(req);
	char **envp = hutch_runner_build_env(req);
	struct hutch_net_policy policy;
	int proxy_fd = -1;
	int watch_fd = -1;
	size_t nfiles = 0;
	struct hutch_file *files = hutch_runner_build_files(req, &nfiles);
	char workdir[1100];
	struct hutch_cell_spec spec = {
		.use_userns = !hutch_cell_is_privileged(),
		.outer_uid = getuid(),
		.outer_gid = getgid(),
		.disk_bytes = req->limits.disk_bytes,
		.files = files,
		.nfiles = nfiles,
		.workdir = HUTCH_WORKSPACE,
		.argv = argv,
		.envp = envp,
		.stdin_fd = stdin_fd,
		.stdout_fd = out_w,
		.stderr_fd = err_w,
		.rlimits = {.file_bytes = req->limits.file_bytes,
			    /* exact with a cgroup (the supervisor polls it); else seconds */
			    .cpu_sec = req->limits.cpu_ms ? (req->limits.cpu_ms + 999) / 1000 +
								    (c->cg.version ? 1 : 0)
							  : 0,
			    .data_bytes = c->cg.version ? 0 : req->limits.memory_bytes,
			    .nproc = c->cg.version ? 0 : req->limits.pids},
		.cgroup = &c->cg,
		.seccomp = hutch_seccomp_profile(err),
	};
	int rc = -1;

	if (req->workdir &&
	    hutch_sandbox_path(req->workdir, workdir, sizeof(workdir), 1, NULL) == 0)
		spec.workdir = workdir;
	/* allow: a listener in the cell for the proxy, and the variables that
	 * point every proxy-aware client at it */
	if (hutch_net_policy_parse(req->net, &policy, err) < 0)
		spec.seccomp = NULL;
	else if (policy.mode == HUTCH_NET_ALLOW) {
		spec.proxy_fd_out = &proxy_fd;
		envp = hutch_proxy_env(envp);
		spec.envp = envp;
	}
	policy.allow_private = req->net_allow_private;
	struct hutch_net_block blocks[HUTCH_NET_MAX_BLOCKS];
	if (policy.mode == HUTCH_NET_FULL) {
		spec.net_full = true;
		spec.blocks = blocks;
		spec.nblocks = hutch_net_full_blocks(&policy, blocks, HUTCH_NET_MAX_BLOCKS);
	}
	/* every connect the program makes is seen (and answered) by the engine */
	spec.connwatch = hutch_seccomp_connwatch(err);
	spec.watch_fd_out = &watch_fd;
	if (!spec.connwatch)
		spec.seccomp = NULL;
	if (spec.seccomp)
		rc = hutch_cell_spawn(&spec, &c->cell, err);
	if (rc == 0 && spec.proxy_fd_out && proxy_fd >= 0) {
		const struct hutch_proxy_caps caps = {req->limits.net_connections,
						      req->limits.net_bytes_out,
						      req->limits.net_bytes_in};
		c->slot = hutch_proxy_start(proxy_fd, &policy, &caps, c->res->id, err);
		if (!c->slot)
			rc = -1; /* the engine kills the cell */
	}
	if (rc == 0 && watch_fd < 0) {
		hutch_err_setx(err, EIO, "the cell did not hand over its connect watch");
		rc = -1;
	}
	if (rc == 0) {
		json_t *ctx = hutch_egress_context(req, c->res->id);
		c->watch = hutch_netwatch_new(watch_fd, &policy, c->res->id);
		hutch_netwatch_set_context(c->watch, ctx);
		hutch_netwatch_set_max_conns(c->watch, req->limits.net_connections);
		if (c->slot)
			hutch_proxy_set_context(c->slot, ctx);
		json_decref(ctx);
	}
	for (size_t i = 0; i < nfiles; i++)
		free(files[i].path);
	free(files);
	hutch_runner_free_strv(argv);
	hutch_runner_free_strv(envp);
	return rc;
}

static int release(struct hutch_engine *c, struct hutch_err *err)
{
	/* the program is gone: end its tunnels and keep what it tried */
	if (c->slot) {
		json_t *log = hutch_proxy_stop(c->slot);
		c->slot = NULL;
		c->res->egress_json = json_dumps(log, JSON_COMPACT);
		json_decref(log);
	}
	return c->cg.version ? hutch_cgroup_destroy(&c->cg, err) : 0;
}

static const struct hutch_engine_ops cold_ops = {
	.path = "cold",
	.acquire = acquire,
	.start = start,
	.release = release,
};

int hutch_run(const struct hutch_exec_request *req, const struct hutch_run_hooks *hooks,
	      struct hutch_exec_result *res, struct hutch_err *err)
{
	pthread_once(&sweep_once, hutch_sweep_stale);
	return hutch_engine_run(&cold_ops, req, hooks, res, err);
}
