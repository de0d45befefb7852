#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "run/engine.h"
#include "run/lang.h"
#include "run/fast.h"
#include "run/netwatch.h"
#include "run/proxy.h"
#include "run/zproto.h"
#include "util/err.h"
#include "util/io.h"
#include "util/fdpass.h"
#include "util/mem.h"

/*
 * The fast path: the same engine as the cold path (engine.c), but the cell
 * is taken ready-made from a pool (namespaces, /proc, writable tmpfs, cgroup
 * and loopback already set up by a zygote's child), so what is left on the
 * critical path is: set the request's cgroup limits, hand the child its
 * stdio and the request, and let it place files, drop privileges and run.
 */

/* node runs in a node cell, where a node started ahead waits for it */
static char cell_kind(const struct hutch_exec_request *req)
{
	const struct hutch_lang *lang = hutch_lang_find(req->language);

	return lang && strcmp(lang->name, "node") == 0 ? HUTCH_CELL_NODE : HUTCH_CELL_ANY;
}

static int acquire(struct hutch_engine *c)
{
	struct hutch_pool *pool = c->ops->data;
	struct hutch_pool_entry *e = hutch_xcalloc(1, sizeof(*e));
	struct hutch_err err;

	if (hutch_pool_take(pool, cell_kind(c->req), e, &err) < 0) {
		free(e);
		hutch_engine_fail(c->res, "pool", &err);
		return -1;
	}
	c->slot = e;
	c->cg = e->cg;
	e->cg.version = 0; /* the engine owns it now (released in release()) */
	/* pool cells are made with the default limits: write only what differs
	 * (each cgroup file write is a few tens of µs here) */
	const struct hutch_limits *l = &c->req->limits;
	bool is_default = l->memory_bytes == HUTCH_DEFAULT_MEMORY &&
			  l->pids == HUTCH_DEFAULT_PIDS && l->cpus == 0;
	(void)hutch_cgroup_set_weight(&c->cg, 100, NULL);
	if (!is_default && hutch_cgroup_set_limits(&c->cg, l, &err) < 0) {
		hutch_engine_fail(c->res, "cgroup", &err);
		return -1;
	}
	hutch_engine_fill_enforced(c, e->cg_note);
	if (e->kind == HUTCH_CELL_NODE) {
		/* its node writes to these already; its start-up's CPU is in
		 * the cgroup's count and not the request's */
		c->given_out = e->out_fd;
		c->given_err = e->err_fd;
		e->out_fd = e->err_fd = -1;
		if (c->cg.version)
			c->cpu_base_us = hutch_cgroup_cpu_us(&c->cg);
	}
	return 0;
}

static int request_memfd(const struct hutch_exec_request *req, struct hutch_err *err)
{
	char *json = hutch_request_to_json(req);
	size_t len = json ? strlen(json) : 0;
	int fd = memfd_create("hutch-request", MFD_CLOEXEC);

	if (fd < 0 || !json) {
		free(json);
		if (fd >= 0)
			close(fd);
		return hutch_err_set(err, fd < 0 ? errno : ENOMEM, "request memfd");
	}
	if (hutch_write_all(fd, json, len) < 0) {
		free(json);
		close(fd);
		return hutch_err_set(err, errno, "write request memfd");
	}
	free(json);
	return fd;
}

/* The cell's network as the request says: for allow:, the proxy on the
 * listener the cell was made with; for none, that listener closed (so
 * 127.0.0.1:3128 refuses). The connect watch either way. Called before the
 * cell gets the request: nothing runs yet. */
static int start_net(struct hutch_engine *c, struct hutch_pool_entry *e, struct hutch_err *err)
{
	struct hutch_net_policy policy;
	json_t *ctx = hutch_egress_context(c->req, c->res->id);
	int rc = 0;

	if (hutch_net_policy_parse(c->req->net, &policy, err) < 0) {
		rc = -1;
	} else if (policy.mode == HUTCH_NET_ALLOW && e->proxy_fd >= 0) {
		const struct hutch_limits *l = &c->req->limits;
		const struct hutch_proxy_caps caps = {l->net_connections, l->net_bytes_out,
						      l->net_bytes_in};
		c->proxy = hutch_proxy_start(e->proxy_fd, &policy, &caps, c->res->id, err);
		e->proxy_fd = -1; /* taken over, also on failure */
		if (c->proxy)
			hutch_proxy_set_context(c->proxy, ctx);
		else
			rc = -1;
	}
	if (e->proxy_fd >= 0) {
		close(e->proxy_fd);
		e->proxy_fd = -1;
	}
	if (e->watch_fd >= 0) {
		c->watch = hutch_netwatch_new(e->watch_fd, &policy, c->res->id);
		hutch_netwatch_set_context(c->watch, ctx);
		e->watch_fd = -1;
	}
	json_decref(ctx);
	return rc;
}

static int start(struct hutch_engine *c, int stdin_fd, int out_w, int err_w, struct hutch_err *err)
{
	struct hutch_pool_entry *e = c->slot;
	struct hutch_zmsg_run msg = {'R', (uint8_t)(c->cg.version != 0), {0}, e->disk_bytes};
	int req_fd = request_memfd(c->req, err);
	int fds[4] = {stdin_fd, out_w, err_w, req_fd};
	/* a node cell has its node's stdout and stderr: stdin and request */
	int nfds = e->kind == HUTCH_CELL_NODE ? 2 : 4;

	if (req_fd < 0)
		return -1;
	if (start_net(c, e, err) < 0) {
		close(req_fd);
		return -1;
	}
	if (nfds == 2)
		fds[1] = req_fd;
	int rc = hutch_send_fds(e->chan, &msg, sizeof(msg), fds, nfds);
	close(req_fd);
	if (rc < 0)
		return hutch_err_set(err, errno, "hand the request to the cell");
	/* The engine owns these now: kill via pidfd, setup outcome on the
	 * channel, init's report on the status pipe. */
	c->cell.pid = e->pid;
	c->cell.pidfd = e->pidfd;
	c->cell.report_fd = e->chan;
	c->cell.status_fd = e->status_fd;
	e->pidfd = e->chan = e->status_fd = -1;
	return 0;
}

static int release(struct hutch_engine *c, struct hutch_err *err)
{
	struct hutch_pool_entry *e = c->slot;

	(void)err;
	/* everything in it was killed in the engine's teardown; removing the
	 * cgroup waits for the kernel to reap them: do it in the background */
	if (c->cg.version)
		hutch_pool_bury(c->ops->data, &c->cg);
	if (e) {
		hutch_pool_entry_release(e);
		free(e);
		c->slot = NULL;
	}
	return 0;
}

int hutch_run_fast(struct hutch_pool *pool, const struct hutch_exec_request *req,
		   const struct hutch_run_hooks *hooks, struct hutch_exec_result *res,
		   struct hutch_err *err)
{
	const struct hutch_engine_ops ops = {
		.path = "fast",
		.acquire = acquire,
		.start = start,
		.release = release,
		.data = pool,
	};

	return hutch_engine_run(&ops, req, hooks, res, err);
}
