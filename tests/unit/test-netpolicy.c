/* Unit tests for src/run/netpolicy.c (the allowlist of --net allow:) and the
 * proxy's list of addresses it refuses (src/run/proxy.c). */
#include <arpa/inet.h>
#include <errno.h>

#include "tap.h"
#include "run/netpolicy.h"
#include "run/netwatch.h"
#include "run/proxy.h"

static struct hutch_net_policy parse_ok(const char *text)
{
	struct hutch_net_policy p;
	struct hutch_err err = {0, ""};

	if (hutch_net_policy_parse(text, &p, &err) != 0)
		TAP_FAIL("'%s' rejected: %s", text, err.msg);
	return p;
}

static void parse_fails(const char *text, const char *why_part)
{
	struct hutch_net_policy p;
	struct hutch_err err = {0, ""};

	if (hutch_net_policy_parse(text, &p, &err) != -1)
		TAP_FAIL("'%s' accepted", text);
	if (!strstr(err.msg, why_part))
		TAP_FAIL("'%s': message '%s' does not say '%s'", text, err.msg, why_part);
}

static void test_none(void)
{
	struct hutch_net_policy p = parse_ok(NULL);

	ASSERT(p.mode == HUTCH_NET_NONE);
	p = parse_ok("none");
	ASSERT(p.mode == HUTCH_NET_NONE);
	ASSERT(!hutch_net_policy_allows(&p, "pypi.org", 443));
}

static void test_full(void)
{
	struct hutch_net_policy p = parse_ok("full");
	struct hutch_net_block blocks[HUTCH_NET_MAX_BLOCKS];
	size_t n;
	bool has_metadata = false;
	bool has_loopback = false;

	ASSERT(p.mode == HUTCH_NET_FULL);
	ASSERT(!p.allow_private);
	/* the routes a full cell gets: special ranges and the host's addresses */
	n = hutch_net_full_blocks(&p, blocks, HUTCH_NET_MAX_BLOCKS);
	ASSERT(n >= 8);
	for (size_t i = 0; i < n; i++) {
		ASSERT(blocks[i].family == AF_INET);
		if (blocks[i].addr[0] == 169 && blocks[i].addr[1] == 254 && blocks[i].prefix == 16)
			has_metadata = true;
		if (blocks[i].addr[0] == 127)
			has_loopback = true; /* the cell's own loopback must work */
	}
	ASSERT(has_metadata);
	ASSERT(!has_loopback);
	p.allow_private = true;
	ASSERT(hutch_net_full_blocks(&p, blocks, HUTCH_NET_MAX_BLOCKS) == 0);
	p = parse_ok("none");
	ASSERT(hutch_net_full_blocks(&p, blocks, HUTCH_NET_MAX_BLOCKS) == 0);
}

static void test_names_and_ports(void)
{
	struct hutch_net_policy p = parse_ok("allow:PyPI.org,files.pythonhosted.org:443");

	ASSERT(p.mode == HUTCH_NET_ALLOW);
	ASSERT(p.nrules == 2);
	ASSERT(hutch_net_policy_allows(&p, "pypi.org", 443));
	ASSERT(hutch_net_policy_allows(&p, "pypi.org", 80));
	ASSERT(hutch_net_policy_allows(&p, "files.pythonhosted.org", 443));
	ASSERT(!hutch_net_policy_allows(&p, "files.pythonhosted.org", 80));
	ASSERT(!hutch_net_policy_allows(&p, "evil.pypi.org", 443));
	ASSERT(!hutch_net_policy_allows(&p, "pypi.org.evil.com", 443));
	ASSERT(!hutch_net_policy_allows(&p, "xpypi.org", 443));
}

static void test_wildcards(void)
{
	struct hutch_net_policy p = parse_ok("allow:*.example.com");

	ASSERT(hutch_net_policy_allows(&p, "a.example.com", 443));
	ASSERT(hutch_net_policy_allows(&p, "a.b.example.com", 443));
	ASSERT(!hutch_net_policy_allows(&p, "example.com", 443));
	ASSERT(!hutch_net_policy_allows(&p, "aexample.com", 443));
	ASSERT(!hutch_net_policy_allows(&p, "example.com.evil", 443));
}

static void test_ip_literals(void)
{
	struct hutch_net_policy p = parse_ok("allow:10.1.2.3,[2001:db8::1]:8443,example.com");

	ASSERT(hutch_net_policy_allows(&p, "10.1.2.3", 80));
	ASSERT(hutch_net_policy_allows(&p, "2001:db8:0::1", 8443));
	ASSERT(!hutch_net_policy_allows(&p, "2001:db8::1", 443));
	ASSERT(hutch_net_policy_lists_ip(&p, "10.1.2.3"));
	ASSERT(!hutch_net_policy_lists_ip(&p, "10.1.2.4"));
	/* a name's address is not the name: the IP of an allowed host is not allowed */
	ASSERT(!hutch_net_policy_allows(&p, "93.184.216.34", 443));
}

static void test_bad_policies(void)
{
	parse_fails("wide", "unknown network policy");
	parse_fails("Full", "unknown network policy");
	parse_fails("full:x", "unknown network policy");
	parse_fails("allow:", "at least one");
	parse_fails("allow:localhost", "not a domain");
	parse_fails("allow:exa mple.com", "not a domain");
	parse_fails("allow:-a.com", "not a domain");
	parse_fails("allow:a..com", "not a domain");
	parse_fails("allow:a.com:0", "bad port");
	parse_fails("allow:a.com:65536", "bad port");
	parse_fails("allow:a.com:http", "bad port");
	parse_fails("allow:[::1", "IPv6");
	parse_fails("allow:*.*.com", "not a domain");
}

static void test_too_many(void)
{
	char text[8192] = "allow:";

	for (int i = 0; i <= HUTCH_NET_MAX_RULES; i++)
		snprintf(text + strlen(text), sizeof(text) - strlen(text), "%sh%d.example.com",
			 i ? "," : "", i);
	parse_fails(text, "more than");
}

static int forbidden(const char *ip)
{
	struct sockaddr_in v4 = {.sin_family = AF_INET};
	struct sockaddr_in6 v6 = {.sin6_family = AF_INET6};

	if (inet_pton(AF_INET, ip, &v4.sin_addr) == 1)
		return hutch_proxy_forbidden((struct sockaddr *)&v4) != NULL;
	if (inet_pton(AF_INET6, ip, &v6.sin6_addr) == 1)
		return hutch_proxy_forbidden((struct sockaddr *)&v6) != NULL;
	TAP_FAIL("bad test address %s", ip);
	return -1;
}

static void test_forbidden_addresses(void)
{
	static const char *const no[] = {"127.0.0.1",
					 "127.9.9.9",
					 "10.0.0.1",
					 "172.16.5.4",
					 "172.31.255.255",
					 "192.168.1.1",
					 "169.254.169.254",
					 "100.64.0.1",
					 "0.0.0.0",
					 "224.0.0.1",
					 "255.255.255.255",
					 "::1",
					 "::",
					 "fe80::1",
					 "fd00::1",
					 "ff02::1",
					 "::ffff:127.0.0.1",
					 "::ffff:169.254.169.254"};
	static const char *const yes[] = {"8.8.8.8", "198.51.100.2", "172.32.0.1", "2001:db8::1",
					  "2606:4700::1111"};

	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		if (forbidden(no[i]) != 1)
			TAP_FAIL("%s is not refused", no[i]);
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		if (forbidden(yes[i]) != 0)
			TAP_FAIL("%s is refused", yes[i]);
}

static const struct tap_case cases[] = {
	TAP_CASE(test_none),
	TAP_CASE(test_full),
	TAP_CASE(test_names_and_ports),
	TAP_CASE(test_wildcards),
	TAP_CASE(test_ip_literals),
	TAP_CASE(test_bad_policies),
	TAP_CASE(test_too_many),
	TAP_CASE(test_forbidden_addresses),
	TAP_END,
};

TAP_MAIN(cases)
