/* The daemon: zygotes and pools behind a unix socket (docs/daemon.md). */
#ifndef HUTCH_API_DAEMON_H
#define HUTCH_API_DAEMON_H

#include "hutch.h"

struct hutch_http_opts;
struct hutch_service;

struct hutch_daemon_opts {
	const char *socket_path; /* resolved (see sockpath.h) */
	const char *state_dir;	 /* sessions live here (see sockpath.h) */
	const char *preload;	 /* Python modules the zygote imports up front */
	unsigned pool_min;
	unsigned pool_max;
	void (*on_ready)(const char *socket_path);
	/* `hutch serve`: also listen for HTTP (NULL: the unix socket only) */
	const struct hutch_http_opts *http;
	/* the agent's entry for POST /v1/agent (see service.h), or NULL */
	char *(*agent)(struct hutch_service *svc, const char *json,
		       const struct hutch_run_hooks *hooks);
};

/* Serve until SIGTERM, SIGINT or SIGHUP. Returns 0, or -1 with err. */
int hutch_daemon_main(const struct hutch_daemon_opts *o, struct hutch_err *err);

#endif
