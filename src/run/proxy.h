/* The egress proxy of network policy allow: (docs/network.md). One per
 * execution, on a listener that lives in the cell's network namespace; it
 * enforces the allowlist, resolves each name once, refuses private and
 * special addresses, checks TLS SNI against the CONNECT host, caps
 * connections and bytes, and records every attempt. */
#ifndef HUTCH_RUN_PROXY_H
#define HUTCH_RUN_PROXY_H

#include <jansson.h>
#include <sys/socket.h>

#include "cell/cell.h"
#include "hutch.h"
#include "run/netpolicy.h"

struct hutch_proxy;

/* Serve on listen_fd (taken over) until stopped. NULL with err on failure. */
struct hutch_proxy_caps {
	uint64_t connections; /* 0: the defaults of proxy.c */
	uint64_t bytes_out;
	uint64_t bytes_in;
};
struct hutch_proxy *hutch_proxy_start(int listen_fd, const struct hutch_net_policy *policy,
				      const struct hutch_proxy_caps *caps, const char *exec_id,
				      struct hutch_err *err);
/* Close the listener and every tunnel, wait for them, free; returns the
 * egress log, a JSON array of attempts (caller owns). NULL p: []. */
json_t *hutch_proxy_stop(struct hutch_proxy *p);

/* Who the attempts belong to, for the log: {"execution_id", "session_id",
 * "labels"} (copied). The default names the exec_id of start. */
void hutch_proxy_set_context(struct hutch_proxy *p, json_t *ctx);
/* Replace the allowlist (a session's policy changed); open tunnels stay. */
void hutch_proxy_set_policy(struct hutch_proxy *p, const struct hutch_net_policy *policy);
/* The log entries recorded since *mark (a copy), and move the mark. */
json_t *hutch_proxy_log_since(struct hutch_proxy *p, size_t *mark);

/* Why a destination address may not be reached unless listed as an IP
 * ("loopback", "private", ...), or NULL. sa is AF_INET or AF_INET6. */
const char *hutch_proxy_forbidden(const struct sockaddr *sa);
/* The same IPv4 ranges (loopback aside) as prefixes, for routes. */
size_t hutch_proxy_forbidden_v4(struct hutch_net_block *out, size_t max);

#endif
