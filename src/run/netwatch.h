/* What a cell tried to reach on its own (docs/network.md, "Direct
 * connections"): the supervisor's side of the connect watch. It answers
 * each connect() and addressed sendto() of the cell at once by the policy
 * (loopback passes; under none and allow: everything else fails with
 * ENETUNREACH; under full, special addresses fail and the rest pass) and
 * records every attempt at an IP destination in the egress log, in the
 * proxy's format. The namespace, its routes and the proxy are what
 * enforce the policy; this is the record, and the fast failure. */
#ifndef HUTCH_RUN_NETWATCH_H
#define HUTCH_RUN_NETWATCH_H

#include <jansson.h>

#include "cell/cell.h"
#include "run/netpolicy.h"

struct hutch_netwatch;

/* Watch listener (taken over) for the execution or session exec_id. */
struct hutch_netwatch *hutch_netwatch_new(int listener, const struct hutch_net_policy *policy,
					  const char *exec_id);
/* The listener, to poll for POLLIN; then call hutch_netwatch_serve. */
int hutch_netwatch_fd(const struct hutch_netwatch *w);
/* Answer every pending notification; never blocks. */
void hutch_netwatch_serve(struct hutch_netwatch *w);
/* Serve from a thread of its own until hutch_netwatch_free (sessions,
 * whose processes connect between calls too). 0, or -1. */
int hutch_netwatch_start_thread(struct hutch_netwatch *w);
/* full: at most max direct connections (limits.net_connections; 0: the
 * default); past it, connect() fails with ECONNREFUSED and is logged as
 * rate_limited. Bytes are not seen here. */
#define HUTCH_NETWATCH_MAX_CONNS 256
void hutch_netwatch_set_max_conns(struct hutch_netwatch *w, uint64_t max);
void hutch_netwatch_set_policy(struct hutch_netwatch *w, const struct hutch_net_policy *policy);
/* Entries recorded since *mark (a copy), and move the mark. */
json_t *hutch_netwatch_log_since(struct hutch_netwatch *w, size_t *mark);
/* Stop, close, free. NULL is fine. */
void hutch_netwatch_free(struct hutch_netwatch *w);

/* Network policy full: the prefixes the cell gets unreachable routes for
 * (private and special ranges, the host's own addresses), none with
 * allow_private. Returns how many were written to out. */
#define HUTCH_NET_MAX_BLOCKS 48
size_t hutch_net_full_blocks(const struct hutch_net_policy *policy, struct hutch_net_block *out,
			     size_t max);

/* The log's context of an execution: {"execution_id", "session_id",
 * "labels"} (caller owns), and the setter (copies). */
json_t *hutch_egress_context(const struct hutch_exec_request *req, const char *exec_id);
void hutch_netwatch_set_context(struct hutch_netwatch *w, json_t *ctx);
/* One egress entry to the log, with its context (both borrowed). */
void hutch_egress_log_event(json_t *ctx, json_t *entry);

/* Merge entries (stolen) into a result's egress JSON text, by time. */
void hutch_egress_merge(char **egress_json, json_t *entries);

#endif
