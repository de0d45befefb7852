#include <arpa/inet.h>
#include <ctype.h>
#include <stddef.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/netpolicy.h"
#include "util/err.h"

/*
 * The allowlist of `--net allow:LIST`. Names are matched exactly, or as
 * "*.domain" for every name below domain; ports, when given, exactly. IP
 * literals are matched as written after normalisation (inet_pton/ntop), so
 * "[2001:db8::1]" and "2001:db8:0::1" are one address.
 */

static bool label_char(char c)
{
	return isalnum((unsigned char)c) || c == '-' || c == '_';
}

/* A DNS name: labels of [A-Za-z0-9_-], 1-63 chars, not starting or ending
 * with '-', separated by single dots. */
static bool valid_name(const char *s)
{
	size_t label = 0;

	if (!*s || strlen(s) > HUTCH_NET_NAME_MAX)
		return false;
	for (const char *p = s;; p++) {
		if (*p == '.' || *p == '\0') {
			if (label == 0 || label > 63 || p[-1] == '-' || p[-(ptrdiff_t)label] == '-')
				return false;
			if (*p == '\0')
				return true;
			label = 0;
		} else if (label_char(*p)) {
			label++;
		} else {
			return false;
		}
	}
}

/* An IP literal in canonical text, or false. */
static bool canonical_ip(const char *s, char *out, size_t size)
{
	unsigned char addr[16];

	if (inet_pton(AF_INET, s, addr) == 1)
		return inet_ntop(AF_INET, addr, out, (socklen_t)size) != NULL;
	if (inet_pton(AF_INET6, s, addr) == 1)
		return inet_ntop(AF_INET6, addr, out, (socklen_t)size) != NULL;
	return false;
}

static int parse_port(const char *s, uint16_t *port)
{
	char *end;
	unsigned long v;

	if (!isdigit((unsigned char)*s))
		return -1;
	v = strtoul(s, &end, 10);
	if (*end || v == 0 || v > 65535)
		return -1;
	*port = (uint16_t)v;
	return 0;
}

static int parse_rule(const char *entry, struct hutch_net_rule *r, struct hutch_err *err)
{
	char host[HUTCH_NET_NAME_MAX + 8];
	const char *port = NULL;
	size_t n = strlen(entry);

	memset(r, 0, sizeof(*r));
	if (n == 0 || n >= sizeof(host))
		return hutch_err_setx(err, EINVAL, "net: entry '%.80s' is empty or too long",
				      entry);
	memcpy(host, entry, n + 1);
	if (host[0] == '[') { /* [v6]:port */
		char *close = strchr(host, ']');
		if (!close || (close[1] && close[1] != ':'))
			return hutch_err_setx(err, EINVAL, "net: '%.80s' is not [IPv6]:port",
					      entry);
		*close = '\0';
		port = close[1] == ':' ? close + 2 : NULL;
		memmove(host, host + 1, strlen(host + 1) + 1);
	} else if (strchr(host, ':') == strrchr(host, ':') && strchr(host, ':')) {
		char *colon = strchr(host, ':'); /* one colon: name:port or v4:port */
		*colon = '\0';
		port = colon + 1;
	}
	if (port && parse_port(port, &r->port) < 0)
		return hutch_err_setx(err, EINVAL, "net: '%.80s' has a bad port", entry);
	if (canonical_ip(host, r->name, sizeof(r->name))) {
		r->is_ip = true;
		return 0;
	}
	for (char *p = host; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	if (strncmp(host, "*.", 2) == 0) {
		r->wildcard = true;
		memmove(host, host + 2, strlen(host + 2) + 1);
	}
	if (!valid_name(host) || !strchr(host, '.'))
		return hutch_err_setx(
			err, EINVAL,
			"net: '%.80s' is not a domain (name.tld or *.name.tld), an IP "
			"or [IPv6], with an optional :port",
			entry);
	snprintf(r->name, sizeof(r->name), "%s", host);
	return 0;
}

int hutch_net_policy_parse(const char *text, struct hutch_net_policy *p, struct hutch_err *err)
{
	char entry[HUTCH_NET_NAME_MAX + 16];
	const char *list;

	memset(p, 0, sizeof(*p));
	if (!text || strcmp(text, "none") == 0)
		return 0;
	if (strcmp(text, "full") == 0) {
		p->mode = HUTCH_NET_FULL;
		return 0;
	}
	if (strncmp(text, "allow:", 6) != 0)
		return hutch_err_setx(err, EINVAL,
				      "unknown network policy '%.80s' (known: none, full, "
				      "allow:DOMAIN,...)",
				      text);
	p->mode = HUTCH_NET_ALLOW;
	list = text + 6;
	while (*list) {
		size_t n = strcspn(list, ",");
		if (n >= sizeof(entry))
			return hutch_err_setx(err, EINVAL, "net: an entry is too long");
		memcpy(entry, list, n);
		entry[n] = '\0';
		if (p->nrules == HUTCH_NET_MAX_RULES)
			return hutch_err_setx(err, E2BIG, "net: more than %d entries",
					      HUTCH_NET_MAX_RULES);
		if (parse_rule(entry, &p->rules[p->nrules], err) < 0)
			return -1;
		p->nrules++;
		list += n;
		if (*list == ',')
			list++;
	}
	if (p->nrules == 0)
		return hutch_err_setx(err, EINVAL, "net: allow: needs at least one domain");
	return 0;
}

static bool name_matches(const struct hutch_net_rule *r, const char *host)
{
	size_t hn = strlen(host);
	size_t rn = strlen(r->name);

	if (!r->wildcard)
		return strcmp(host, r->name) == 0;
	/* "*.x.org" matches "a.x.org" and "a.b.x.org", not "x.org" or "ax.org" */
	return hn > rn + 1 && host[hn - rn - 1] == '.' && strcmp(host + hn - rn, r->name) == 0;
}

bool hutch_net_policy_allows(const struct hutch_net_policy *p, const char *host, uint16_t port)
{
	char ip[64];
	bool literal = canonical_ip(host, ip, sizeof(ip));

	if (p->mode != HUTCH_NET_ALLOW)
		return false;
	for (int i = 0; i < p->nrules; i++) {
		const struct hutch_net_rule *r = &p->rules[i];
		if (r->port && r->port != port)
			continue;
		if (literal ? r->is_ip && strcmp(r->name, ip) == 0
			    : !r->is_ip && name_matches(r, host))
			return true;
	}
	return false;
}

bool hutch_net_policy_lists_ip(const struct hutch_net_policy *p, const char *ip)
{
	char canon[64];

	if (!canonical_ip(ip, canon, sizeof(canon)))
		return false;
	for (int i = 0; i < p->nrules; i++)
		if (p->rules[i].is_ip && strcmp(p->rules[i].name, canon) == 0)
			return true;
	return false;
}
