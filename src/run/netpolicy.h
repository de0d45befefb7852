/* Network policies of a request (`net`): "none", "full", or "allow:LIST" where LIST
 * is comma-separated domains ("pypi.org", "*.example.com"), IP literals
 * ("203.0.113.7", "[2001:db8::1]"), each optionally with ":port". Pure. */
#ifndef HUTCH_RUN_NETPOLICY_H
#define HUTCH_RUN_NETPOLICY_H

#include <stdbool.h>
#include <stdint.h>

#include "hutch.h"

#define HUTCH_NET_MAX_RULES 64
#define HUTCH_NET_NAME_MAX  253

enum hutch_net_mode { HUTCH_NET_NONE, HUTCH_NET_ALLOW, HUTCH_NET_FULL };

struct hutch_net_rule {
	char name[HUTCH_NET_NAME_MAX + 1]; /* lower case; for "*.x.org", "x.org" */
	bool wildcard;			   /* "*.x.org": any name under x.org (not x.org) */
	bool is_ip;			   /* an IP literal: also allows that private address */
	uint16_t port;			   /* 0: any port */
};

struct hutch_net_policy {
	enum hutch_net_mode mode;
	struct hutch_net_rule rules[HUTCH_NET_MAX_RULES];
	int nrules;
	/* full: private ranges, metadata and the host's own addresses are
	 * reachable too (the request's network_allow_private) */
	bool allow_private;
};

/* Parse a request's `net` (NULL means "none"). -1 with err naming the
 * offending entry. */
int hutch_net_policy_parse(const char *text, struct hutch_net_policy *p, struct hutch_err *err);

/* Whether host (a name in lower case, or an IP literal without brackets)
 * and port are allowed by p. */
bool hutch_net_policy_allows(const struct hutch_net_policy *p, const char *host, uint16_t port);

/* Whether the policy lists this exact IP literal (so a private address may
 * be reached because someone asked for it by number). */
bool hutch_net_policy_lists_ip(const struct hutch_net_policy *p, const char *ip);

#endif
