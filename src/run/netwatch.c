#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cell/connwatch.h"
#include "run/netwatch.h"
#include "run/proxy.h"
#include "util/log.h"
#include "util/mem.h"

#define MAX_LOG	       100000 /* a long session's log has a bound */
#define MAX_HOST_ADDRS 32

struct hutch_netwatch {
	int fd;
	int stop[2]; /* the thread's wake-up, when there is one */
	pthread_t thread;
	bool threaded;
	pthread_mutex_t mu;
	struct hutch_net_policy policy;
	char exec_id[64];
	json_t *ctx; /* who made the attempts, for the log */
	json_t *log;
	uint64_t max_conns; /* full: allowed direct attempts per execution */
	uint64_t nconns;
	/* the host's own addresses: under full, slirp would reach them */
	struct sockaddr_storage host[MAX_HOST_ADDRS];
	int nhost;
};

static void load_host_addrs(struct hutch_netwatch *w)
{
	struct ifaddrs *ifs = NULL;

	if (getifaddrs(&ifs) < 0)
		return;
	for (struct ifaddrs *i = ifs; i && w->nhost < MAX_HOST_ADDRS; i = i->ifa_next) {
		if (!i->ifa_addr ||
		    (i->ifa_addr->sa_family != AF_INET && i->ifa_addr->sa_family != AF_INET6))
			continue;
		size_t len = i->ifa_addr->sa_family == AF_INET ? sizeof(struct sockaddr_in)
							       : sizeof(struct sockaddr_in6);
		memcpy(&w->host[w->nhost++], i->ifa_addr, len);
	}
	freeifaddrs(ifs);
}

size_t hutch_net_full_blocks(const struct hutch_net_policy *policy, struct hutch_net_block *out,
			     size_t max)
{
	struct hutch_netwatch w = {.nhost = 0};
	size_t n;

	if (policy->mode != HUTCH_NET_FULL || policy->allow_private)
		return 0;
	n = hutch_proxy_forbidden_v4(out, max);
	load_host_addrs(&w);
	for (int i = 0; i < w.nhost && n < max; i++) {
		if (w.host[i].ss_family != AF_INET)
			continue; /* slirp4netns gives the cell no IPv6 */
		const struct sockaddr_in *in = (const struct sockaddr_in *)&w.host[i];
		if ((ntohl(in->sin_addr.s_addr) >> 24) == 127)
			continue;
		out[n].family = AF_INET;
		memcpy(out[n].addr, &in->sin_addr, 4);
		out[n].prefix = 32;
		n++;
	}
	return n;
}

struct hutch_netwatch *hutch_netwatch_new(int listener, const struct hutch_net_policy *policy,
					  const char *exec_id)
{
	struct hutch_netwatch *w = hutch_xcalloc(1, sizeof(*w));

	w->fd = listener;
	w->stop[0] = w->stop[1] = -1;
	w->policy = *policy;
	snprintf(w->exec_id, sizeof(w->exec_id), "%s", exec_id);
	w->ctx = json_pack("{s:s}", "execution_id", exec_id);
	w->log = json_array();
	w->max_conns = HUTCH_NETWATCH_MAX_CONNS;
	pthread_mutex_init(&w->mu, NULL);
	if (policy->mode == HUTCH_NET_FULL)
		load_host_addrs(w);
	return w;
}

int hutch_netwatch_fd(const struct hutch_netwatch *w)
{
	return w->fd;
}

static bool same_ip(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
		      &((const struct sockaddr_in6 *)b)->sin6_addr, sizeof(struct in6_addr)) == 0;
}

static bool is_loopback(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
	const struct in6_addr *a = &((const struct sockaddr_in6 *)ss)->sin6_addr;
	return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
}

/* slirp4netns's DNS forwarder, the cell's nameserver under full */
static bool is_slirp_dns(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET &&
	       ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) == 0x0a000203;
}

/* NULL: let it through; else why not. Called with w->mu held. */
static const char *judge(const struct hutch_netwatch *w, const struct sockaddr_storage *ss)
{
	const char *why;

	switch (w->policy.mode) {
	case HUTCH_NET_NONE:
		return "network policy none: the sandbox has no network";
	case HUTCH_NET_ALLOW:
		return "a direct connection under allow: only the proxy (HTTP_PROXY, "
		       "127.0.0.1:3128) leads out";
	case HUTCH_NET_FULL:
		if (w->policy.allow_private)
			return NULL;
		if (is_slirp_dns(ss))
			return NULL;
		for (int i = 0; i < w->nhost; i++)
			if (same_ip(&w->host[i], ss))
				return "an address of the host under full";
		why = hutch_proxy_forbidden((const struct sockaddr *)ss);
		return why ? why : NULL;
	}
	return "unknown policy";
}

static void record(struct hutch_netwatch *w, const struct hutch_connwatch_event *ev,
		   const char *why, int type, bool limited)
{
	char addr[INET6_ADDRSTRLEN] = "?";
	char reason[240];
	struct timespec now;
	const char *proto = type == SOCK_STREAM ? "tcp" : type == SOCK_DGRAM ? "udp" : "ip";
	unsigned port;

	if (ev->addr.ss_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)&ev->addr;
		inet_ntop(AF_INET, &in->sin_addr, addr, sizeof(addr));
		port = ntohs(in->sin_port);
	} else {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&ev->addr;
		inet_ntop(AF_INET6, &in6->sin6_addr, addr, sizeof(addr));
		port = ntohs(in6->sin6_port);
	}
	if (limited)
		snprintf(reason, sizeof(reason), "more than %llu connections in one execution",
			 (unsigned long long)w->max_conns);
	else if (why && w->policy.mode == HUTCH_NET_FULL && !strstr(why, "under full"))
		snprintf(reason, sizeof(reason),
			 "%s address under full (--net-allow-private opens it)", why);
	else if (!why && is_slirp_dns(&ev->addr))
		snprintf(reason, sizeof(reason), "the name service of full (slirp4netns)");
	else
		snprintf(reason, sizeof(reason), "%s", why ? why : "direct connection");
	clock_gettime(CLOCK_REALTIME, &now);
	json_t *e = json_pack("{s:I,s:s,s:s,s:s,s:i,s:s,s:s,s:I,s:I,s:I}", "time_ms",
			      (json_int_t)now.tv_sec * 1000 + now.tv_nsec / 1000000, "protocol",
			      proto, "host", addr, "address", addr, "port", (int)port, "verdict",
			      limited ? "rate_limited"
			      : why   ? "denied"
				      : "allowed",
			      "reason", reason, "bytes_out", (json_int_t)0, "bytes_in",
			      (json_int_t)0, "duration_ms", (json_int_t)0);
	hutch_egress_log_event(w->ctx, e);
	if (json_array_size(w->log) < MAX_LOG)
		json_array_append_new(w->log, e);
	else
		json_decref(e);
}

void hutch_egress_log_event(json_t *ctx, json_t *entry)
{
	json_t *f = json_deep_copy(entry);

	if (f && json_is_object(ctx))
		json_object_update(f, ctx);
	hutch_log_event(HUTCH_LOG_INFO, "egress", f);
	json_decref(f);
}

json_t *hutch_egress_context(const struct hutch_exec_request *req, const char *exec_id)
{
	json_t *labels = json_object();

	for (size_t i = 0; i < req->nlabels; i++) {
		const char *eq = strchr(req->labels[i], '=');
		if (!eq)
			continue;
		char key[128];
		snprintf(key, sizeof(key), "%.*s", (int)(eq - req->labels[i]), req->labels[i]);
		json_object_set_new(labels, key, json_string(eq + 1));
	}
	return json_pack("{s:s,s:s?,s:o}", "execution_id", exec_id, "session_id", req->session_id,
			 "labels", labels);
}

void hutch_netwatch_set_context(struct hutch_netwatch *w, json_t *ctx)
{
	pthread_mutex_lock(&w->mu);
	json_decref(w->ctx);
	w->ctx = json_deep_copy(ctx);
	pthread_mutex_unlock(&w->mu);
}

void hutch_netwatch_serve(struct hutch_netwatch *w)
{
	struct hutch_connwatch_event ev;

	for (;;) {
		struct pollfd pfd = {w->fd, POLLIN, 0};
		if (poll(&pfd, 1, 0) <= 0 || !(pfd.revents & POLLIN))
			return;
		if (hutch_connwatch_recv(w->fd, &ev) <= 0)
			return;
		if (!ev.is_ip || is_loopback(&ev.addr)) {
			hutch_connwatch_reply(w->fd, &ev, 0); /* unix sockets, loopback */
			continue;
		}
		/* while the caller waits: once answered, it may close the socket */
		int type = hutch_connwatch_socktype(&ev);
		pthread_mutex_lock(&w->mu);
		const char *why = judge(w, &ev.addr);
		/* full's connection cap: the answer is final for this call */
		bool limited = !why && !is_slirp_dns(&ev.addr) && ++w->nconns > w->max_conns;
		hutch_connwatch_reply(w->fd, &ev, why ? ENETUNREACH : limited ? ECONNREFUSED : 0);
		record(w, &ev, why, type, limited);
		pthread_mutex_unlock(&w->mu);
	}
}

static void *watch_main(void *arg)
{
	struct hutch_netwatch *w = arg;

	for (;;) {
		struct pollfd pfd[2] = {{w->fd, POLLIN, 0}, {w->stop[0], POLLIN, 0}};
		if (poll(pfd, 2, -1) < 0 && errno != EINTR)
			return NULL;
		if (pfd[1].revents)
			return NULL;
		if (pfd[0].revents & (POLLHUP | POLLERR))
			return NULL; /* every process of the cell is gone */
		if (pfd[0].revents & POLLIN)
			hutch_netwatch_serve(w);
	}
}

int hutch_netwatch_start_thread(struct hutch_netwatch *w)
{
	if (pipe2(w->stop, O_CLOEXEC) < 0)
		return -1;
	if (pthread_create(&w->thread, NULL, watch_main, w) != 0) {
		close(w->stop[0]);
		close(w->stop[1]);
		w->stop[0] = w->stop[1] = -1;
		return -1;
	}
	w->threaded = true;
	return 0;
}

void hutch_netwatch_set_max_conns(struct hutch_netwatch *w, uint64_t max)
{
	pthread_mutex_lock(&w->mu);
	w->max_conns = max ? max : HUTCH_NETWATCH_MAX_CONNS;
	pthread_mutex_unlock(&w->mu);
}

void hutch_netwatch_set_policy(struct hutch_netwatch *w, const struct hutch_net_policy *policy)
{
	pthread_mutex_lock(&w->mu);
	w->policy = *policy;
	pthread_mutex_unlock(&w->mu);
}

json_t *hutch_netwatch_log_since(struct hutch_netwatch *w, size_t *mark)
{
	json_t *a = json_array();

	if (!w)
		return a;
	pthread_mutex_lock(&w->mu);
	for (size_t i = *mark; i < json_array_size(w->log); i++)
		json_array_append_new(a, json_deep_copy(json_array_get(w->log, i)));
	*mark = json_array_size(w->log);
	pthread_mutex_unlock(&w->mu);
	return a;
}

void hutch_netwatch_free(struct hutch_netwatch *w)
{
	if (!w)
		return;
	if (w->threaded) {
		(void)!write(w->stop[1], "x", 1);
		pthread_join(w->thread, NULL);
		close(w->stop[0]);
		close(w->stop[1]);
	}
	close(w->fd);
	json_decref(w->log);
	json_decref(w->ctx);
	pthread_mutex_destroy(&w->mu);
	free(w);
}

struct entry {
	json_t *e;
	json_int_t t;
};

static int by_time(const void *a, const void *b)
{
	json_int_t ta = ((const struct entry *)a)->t;
	json_int_t tb = ((const struct entry *)b)->t;

	return (ta > tb) - (ta < tb);
}

void hutch_egress_merge(char **egress_json, json_t *entries)
{
	json_t *all = *egress_json ? json_loads(*egress_json, 0, NULL) : NULL;

	if (!json_array_size(entries)) {
		json_decref(entries);
		json_decref(all);
		return;
	}
	if (!json_is_array(all)) {
		json_decref(all);
		all = json_array();
	}
	json_array_extend(all, entries);
	json_decref(entries);
	size_t n = json_array_size(all);
	struct entry *v = hutch_xcalloc(n ? n : 1, sizeof(struct entry));
	for (size_t i = 0; i < n; i++) {
		v[i].e = json_incref(json_array_get(all, i));
		v[i].t = json_integer_value(json_object_get(v[i].e, "time_ms"));
	}
	qsort(v, n, sizeof(struct entry), by_time); /* ties keep no order */
	json_array_clear(all);
	for (size_t i = 0; i < n; i++)
		json_array_append_new(all, v[i].e);
	free(v);
	free(*egress_json);
	*egress_json = json_dumps(all, JSON_COMPACT);
	json_decref(all);
}
