#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "run/netwatch.h"
#include "run/proxy.h"
#include "run/proxy_parse.h"
#include "run/sni.h"
#include "util/err.h"
#include "util/log.h"
#include "util/mem.h"
#include "util/time.h"

/*
 * The proxy speaks the two forms every proxy-aware client uses: CONNECT
 * host:port (then TLS through the tunnel) and plain HTTP with an
 * absolute-form target. One thread per connection; the acceptor and every
 * connection also poll a stop pipe, so hutch_proxy_stop ends them at once.
 *
 * What it decides, in order: the allowlist (name and port as the client
 * asked), the name's addresses (resolved once per execution and then kept:
 * no DNS rebinding between the check and later connects), whether each
 * address is a special one (loopback, private, link-local and the cloud
 * metadata address, multicast...) unless listed by number, and for tunnels
 * to names, that the TLS ClientHello names the same host (no fronting).
 */

#define HEAD_MAX 16384 /* request line and headers */
/* the request head, then a whole ClientHello record */
#define BUF_SIZE	   (HEAD_MAX > HUTCH_TLS_SNI_MAX_BYTES ? HEAD_MAX : HUTCH_TLS_SNI_MAX_BYTES)
#define CLIENT_TIMEOUT_MS  10000 /* for the request head and the ClientHello */
#define CONNECT_TIMEOUT_MS 5000
#define MAX_CONNS	   256		  /* per execution */
#define MAX_BYTES_OUT	   (256ull << 20) /* per execution, client to servers */
#define MAX_BYTES_IN	   (1ull << 30)	  /* per execution, servers to client */
#define MAX_NAMES	   64		  /* resolved names kept per execution */

struct resolved {
	char host[HUTCH_NET_NAME_MAX + 1];
	struct sockaddr_storage addrs[8];
	socklen_t lens[8];
	int n;
	int gai_error;
};

struct conn {
	struct hutch_proxy *p;
	int client;
	pthread_t thread;
	struct conn *next;
};

struct hutch_proxy {
	int lfd;
	int stop[2];
	pthread_t acceptor;
	struct hutch_net_policy policy;
	uint64_t max_conns;
	uint64_t max_out;
	uint64_t max_in;
	char exec_id[40];
	json_t *ctx;	    /* who made the attempts, for the log (under mu) */
	pthread_mutex_t mu; /* everything below */
	json_t *log;
	struct conn *conns;
	int nconns;
	int active;	      /* connections not yet recorded */
	pthread_cond_t quiet; /* active fell to 0 */
	uint64_t bytes_out;
	uint64_t bytes_in;
	struct resolved names[MAX_NAMES];
	int nnames;
};

/* --- addresses --- */

static bool v4_in(uint32_t a, uint32_t net, int bits)
{
	uint32_t mask = bits ? ~0u << (32 - bits) : 0;

	return (a & mask) == (net & mask);
}

static const struct {
	uint32_t net;
	int bits;
	const char *why;
} ranges[] = {
	{0x00000000, 8, "unspecified"},
	{0x7f000000, 8, "loopback"},
	{0x0a000000, 8, "private"},
	{0xac100000, 12, "private"},
	{0xc0a80000, 16, "private"},
	{0x64400000, 10, "shared (CGNAT)"},
	{0xa9fe0000, 16, "link-local (cloud metadata)"},
	{0xe0000000, 4, "multicast"},
	{0xf0000000, 4, "reserved"},
};

static const char *forbidden_v4(uint32_t a)
{
	for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++)
		if (v4_in(a, ranges[i].net, ranges[i].bits))
			return ranges[i].why;
	return NULL;
}

size_t hutch_proxy_forbidden_v4(struct hutch_net_block *out, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]) && n < max; i++) {
		if (ranges[i].net == 0x7f000000)
			continue; /* the cell's own loopback */
		uint32_t be = htonl(ranges[i].net);
		out[n].family = AF_INET;
		memcpy(out[n].addr, &be, 4);
		out[n].prefix = (unsigned char)ranges[i].bits;
		n++;
	}
	return n;
}

const char *hutch_proxy_forbidden(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return forbidden_v4(ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr));
	if (sa->sa_family != AF_INET6)
		return "not an IP address";
	const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
	if (IN6_IS_ADDR_V4MAPPED(a)) {
		uint32_t v4;
		memcpy(&v4, &a->s6_addr[12], 4);
		return forbidden_v4(ntohl(v4));
	}
	if (IN6_IS_ADDR_UNSPECIFIED(a))
		return "unspecified";
	if (IN6_IS_ADDR_LOOPBACK(a))
		return "loopback";
	if (IN6_IS_ADDR_LINKLOCAL(a))
		return "link-local";
	if ((a->s6_addr[0] & 0xfe) == 0xfc)
		return "private (unique local)";
	if (a->s6_addr[0] == 0xff)
		return "multicast";
	return NULL;
}

static void addr_text(const struct sockaddr_storage *ss, char *out, size_t n)
{
	const void *a = ss->ss_family == AF_INET
				? (const void *)&((const struct sockaddr_in *)ss)->sin_addr
				: (const void *)&((const struct sockaddr_in6 *)ss)->sin6_addr;

	if (!inet_ntop(ss->ss_family, a, out, (socklen_t)n))
		snprintf(out, n, "?");
}

/* The name's addresses, from the cache or resolved now (and kept). */
static struct resolved *resolve(struct hutch_proxy *p, const char *host)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
	struct addrinfo *res = NULL;
	struct resolved *r = NULL;

	pthread_mutex_lock(&p->mu);
	for (int i = 0; i < p->nnames; i++)
		if (strcmp(p->names[i].host, host) == 0)
			r = &p->names[i];
	pthread_mutex_unlock(&p->mu);
	if (r)
		return r;
	struct resolved fresh;
	memset(&fresh, 0, sizeof(fresh));
	snprintf(fresh.host, sizeof(fresh.host), "%s", host);
	fresh.gai_error = getaddrinfo(host, NULL, &hints, &res);
	for (struct addrinfo *ai = res; ai && fresh.n < 8; ai = ai->ai_next) {
		if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6)
			continue;
		memcpy(&fresh.addrs[fresh.n], ai->ai_addr, ai->ai_addrlen);
		fresh.lens[fresh.n++] = ai->ai_addrlen;
	}
	if (res)
		freeaddrinfo(res);
	pthread_mutex_lock(&p->mu);
	for (int i = 0; i < p->nnames && !r; i++) /* another thread was quicker */
		if (strcmp(p->names[i].host, host) == 0)
			r = &p->names[i];
	if (!r && p->nnames < MAX_NAMES) {
		p->names[p->nnames] = fresh;
		r = &p->names[p->nnames++];
	}
	pthread_mutex_unlock(&p->mu);
	return r;
}

/* --- one attempt, for the log --- */

struct attempt {
	struct hutch_proxy *p;
	uint64_t t0;
	char protocol[8];
	char host[HUTCH_NET_NAME_MAX + 1];
	char address[64];
	unsigned port;
	const char *verdict;
	char reason[200];
	uint64_t out;
	uint64_t in;
};

static void record(struct attempt *a)
{
	struct hutch_proxy *p = a->p;
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	json_t *e = json_pack("{s:I,s:s,s:s,s:s?,s:i,s:s,s:s,s:I,s:I,s:I}", "time_ms",
			      (json_int_t)now.tv_sec * 1000 + now.tv_nsec / 1000000, "protocol",
			      a->protocol, "host", a->host, "address",
			      a->address[0] ? a->address : NULL, "port", (int)a->port, "verdict",
			      a->verdict, "reason", a->reason, "bytes_out", (json_int_t)a->out,
			      "bytes_in", (json_int_t)a->in, "duration_ms",
			      (json_int_t)((hutch_now_us() - a->t0) / 1000));
	pthread_mutex_lock(&p->mu);
	hutch_egress_log_event(p->ctx, e);
	if (json_array_size(p->log) < 100000) /* a long session's log has a bound */
		json_array_append_new(p->log, e);
	else
		json_decref(e);
	pthread_mutex_unlock(&p->mu);
}

static void deny(struct attempt *a, int client, int status, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void deny(struct attempt *a, int client, int status, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(a->reason, sizeof(a->reason), fmt, ap);
	va_end(ap);
	if (!a->verdict)
		a->verdict = "denied";
	record(a); /* before the answer: a client that exits on it finds it logged */
	if (status) {
		int n = snprintf(
			msg, sizeof(msg),
			"HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n"
			"hutch: %s:%u: %s\n",
			status,
			status == 403	? "Forbidden"
			: status == 400 ? "Bad Request"
					: "Bad Gateway",
			a->host, a->port, a->reason);
		(void)!send(client, msg, (size_t)n, MSG_NOSIGNAL);
	}
}

/* --- the client's side --- */

/* Wait for fd (or the stop pipe); false on stop or timeout. */
static bool wait_readable(struct hutch_proxy *p, int fd, int timeout_ms)
{
	struct pollfd pfd[2] = {{fd, POLLIN, 0}, {p->stop[0], POLLIN, 0}};

	return poll(pfd, 2, timeout_ms) > 0 && !pfd[1].revents && pfd[0].revents;
}

/* Read the request head (through the blank line); its length, or -1. */
static ssize_t read_head(struct hutch_proxy *p, int fd, char *buf, size_t size, size_t *got)
{
	uint64_t end = hutch_now_us() + (uint64_t)CLIENT_TIMEOUT_MS * 1000;

	*got = 0;
	while (*got < size - 1) {
		uint64_t now = hutch_now_us();
		if (now >= end || !wait_readable(p, fd, (int)((end - now) / 1000) + 1))
			return -1;
		ssize_t n = recv(fd, buf + *got, size - 1 - *got, 0);
		if (n <= 0)
			return -1;
		*got += (size_t)n;
		buf[*got] = '\0';
		char *blank = strstr(buf, "\r\n\r\n");
		if (blank)
			return blank + 4 - buf;
	}
	return -1;
}

/* --- the server's side --- */

static int connect_to(const struct sockaddr_storage *ss, socklen_t len, unsigned port)
{
	struct sockaddr_storage to = *ss;
	int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	if (fd < 0)
		return -1;
	if (to.ss_family == AF_INET)
		((struct sockaddr_in *)&to)->sin_port = htons((uint16_t)port);
	else
		((struct sockaddr_in6 *)&to)->sin6_port = htons((uint16_t)port);
	if (connect(fd, (struct sockaddr *)&to, len) < 0 && errno != EINPROGRESS) {
		close(fd);
		return -1;
	}
	struct pollfd pfd = {fd, POLLOUT, 0};
	int soerr = 0;
	socklen_t sl = sizeof(soerr);
	if (poll(&pfd, 1, CONNECT_TIMEOUT_MS) <= 0 ||
	    getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0 || soerr) {
		close(fd);
		errno = soerr ? soerr : ETIMEDOUT;
		return -1;
	}
	fcntl(fd, F_SETFL, 0);
	return fd;
}

/* Pick the first address allowed; connect. -1 with a->reason set. */
static int open_upstream(struct hutch_proxy *p, struct attempt *a, int *status)
{
	struct sockaddr_storage lit;
	struct resolved one;
	struct resolved *r = &one;
	bool literal = false;

	memset(&one, 0, sizeof(one));
	memset(&lit, 0, sizeof(lit));
	if (inet_pton(AF_INET, a->host, &((struct sockaddr_in *)&lit)->sin_addr) == 1) {
		lit.ss_family = AF_INET;
		one.lens[0] = sizeof(struct sockaddr_in);
		literal = true;
	} else if (inet_pton(AF_INET6, a->host, &((struct sockaddr_in6 *)&lit)->sin6_addr) == 1) {
		lit.ss_family = AF_INET6;
		one.lens[0] = sizeof(struct sockaddr_in6);
		literal = true;
	}
	if (literal) {
		one.addrs[0] = lit;
		one.n = 1;
	} else {
		r = resolve(p, a->host);
		if (!r || r->n == 0) {
			*status = 502;
			snprintf(a->reason, sizeof(a->reason), "cannot resolve: %s",
				 r ? gai_strerror(r->gai_error) : "too many names");
			a->verdict = "allowed"; /* by the policy; the name just did not resolve */
			return -1;
		}
	}
	const char *why = NULL;
	for (int i = 0; i < r->n; i++) {
		addr_text(&r->addrs[i], a->address, sizeof(a->address));
		why = hutch_proxy_forbidden((const struct sockaddr *)&r->addrs[i]);
		pthread_mutex_lock(&p->mu);
		bool listed = why && hutch_net_policy_lists_ip(&p->policy, a->address);
		pthread_mutex_unlock(&p->mu);
		if (why && !listed)
			continue;
		int fd = connect_to(&r->addrs[i], r->lens[i], a->port);
		if (fd >= 0)
			return fd;
		*status = 502;
		snprintf(a->reason, sizeof(a->reason), "connect to %s failed: %s", a->address,
			 strerror(errno));
		a->verdict = "allowed";
		return -1;
	}
	*status = 403;
	snprintf(a->reason, sizeof(a->reason),
		 "%s resolves to a %s address; list it by number to allow it", a->host,
		 why ? why : "refused");
	return -1;
}

/* --- relaying --- */

static bool send_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		buf += n;
		len -= (size_t)n;
	}
	return true;
}

/* Count bytes against the execution's caps; false once over. */
static bool charge(struct attempt *a, uint64_t n, bool out)
{
	struct hutch_proxy *p = a->p;
	bool over;

	pthread_mutex_lock(&p->mu);
	if (out)
		p->bytes_out += n;
	else
		p->bytes_in += n;
	over = p->bytes_out > p->max_out || p->bytes_in > p->max_in;
	pthread_mutex_unlock(&p->mu);
	*(out ? &a->out : &a->in) += n;
	return !over;
}

static void relay(struct attempt *a, int client, int server)
{
	char buf[65536];
	bool open[2] = {true, true}; /* client->server, server->client */

	while (open[0] || open[1]) {
		struct pollfd pfd[3] = {{open[0] ? client : -1, POLLIN, 0},
					{open[1] ? server : -1, POLLIN, 0},
					{a->p->stop[0], POLLIN, 0}};
		if (poll(pfd, 3, -1) < 0 && errno != EINTR)
			return;
		if (pfd[2].revents)
			return;
		for (int i = 0; i < 2; i++) {
			if (!pfd[i].revents)
				continue;
			int from = i == 0 ? client : server;
			int to = i == 0 ? server : client;
			ssize_t n = recv(from, buf, sizeof(buf), 0);
			if (n <= 0) {
				shutdown(to, SHUT_WR); /* pass the half-close on */
				open[i] = false;
				continue;
			}
			if (!charge(a, (uint64_t)n, i == 0)) {
				a->verdict = "rate_limited";
				snprintf(a->reason, sizeof(a->reason),
					 "the execution passed its egress byte cap");
				return;
			}
			if (!send_all(to, buf, (size_t)n))
				return;
		}
	}
}

/* Whether the tunnel may go on, given the client's first bytes (got of
 * them in buf): 1 yes, 0 need more, -1 no (denied and logged). */
static int judge_first_bytes(struct attempt *a, const char *buf, size_t got, size_t size)
{
	char sni[HUTCH_NET_NAME_MAX + 1];
	struct in6_addr tmp;
	bool host_is_ip =
		inet_pton(AF_INET, a->host, &tmp) == 1 || inet_pton(AF_INET6, a->host, &tmp) == 1;
	bool looks_tls = got >= 1 && (unsigned char)buf[0] == 0x16;
	int rc = hutch_tls_sni((const unsigned char *)buf, got, sni, sizeof(sni));

	a->verdict = "denied";
	if (rc == 0 && got < size)
		return 0;
	if (rc == 0) {
		deny(a, -1, 0, "TLS ClientHello larger than one record");
		return -1;
	}
	if (rc == 1 && strcmp(sni, a->host) != 0) {
		deny(a, -1, 0, "TLS SNI '%s' does not match the CONNECT host", sni);
		return -1;
	}
	if (rc == -2 && !host_is_ip) {
		deny(a, -1, 0, "TLS ClientHello without a server name");
		return -1;
	}
	/* something that starts like TLS but does not parse is refused on any
	 * port: it may be a ClientHello built to slip past this check */
	if (rc == -1 && (looks_tls || a->port == 443)) {
		deny(a, -1, 0, "%s",
		     looks_tls ? "malformed TLS ClientHello" : "not TLS on port 443");
		return -1;
	}
	if (rc == -1)
		snprintf(a->protocol, sizeof(a->protocol), "tcp");
	a->verdict = "allowed";
	return 1;
}

/* After CONNECT: read the client's first bytes (after the `got` already in
 * buf, sent with the CONNECT) until they can be judged. Returns the bytes
 * to forward, or -1 after denying. */
static ssize_t check_tunnel(struct attempt *a, int client, char *buf, size_t size, size_t got)
{
	uint64_t end = hutch_now_us() + (uint64_t)CLIENT_TIMEOUT_MS * 1000;

	for (;;) {
		if (got > 0) {
			int verdict = judge_first_bytes(a, buf, got, size);
			if (verdict != 0)
				return verdict > 0 ? (ssize_t)got : -1;
		}
		uint64_t now = hutch_now_us();
		bool ready =
			now < end && wait_readable(a->p, client, (int)((end - now) / 1000) + 1);
		ssize_t n = ready ? recv(client, buf + got, size - got, 0) : 0;
		if (n > 0) {
			got += (size_t)n;
			continue;
		}
		/* silence, a close, or a stop: only a protocol where the server
		 * speaks first may go on, and only before any byte (not 443) */
		if (!ready && got == 0 && a->port != 443 && hutch_now_us() >= end) {
			snprintf(a->protocol, sizeof(a->protocol), "tcp");
			return 0;
		}
		a->verdict = "denied";
		deny(a, -1, 0, "%s",
		     got ? "incomplete TLS ClientHello" : "no ClientHello before the deadline");
		return -1;
	}
}

/* Plain HTTP: the request again, in origin form, without proxy headers,
 * one request per connection. */
static bool forward_http(const struct hutch_proxy_request *r, const char *head, size_t head_len,
			 const char *extra, size_t extra_len, int server)
{
	char *out = hutch_xmalloc(head_len + 64 + sizeof(r->path));
	size_t n = (size_t)snprintf(out, 64 + sizeof(r->path), "%s %s HTTP/1.1\r\n", r->method,
				    r->path);
	const char *line = r->rest;

	while (line < head + head_len) {
		const char *eol = strstr(line, "\r\n");
		if (!eol || eol == line)
			break;
		size_t ln = (size_t)(eol - line);
		if (strncasecmp(line, "proxy-", 6) != 0 &&
		    strncasecmp(line, "connection:", 11) != 0) {
			memcpy(out + n, line, ln + 2); /* the line and its CRLF */
			n += ln + 2;
		}
		line = eol + 2;
	}
	n += (size_t)sprintf(out + n, "Connection: close\r\n\r\n");
	bool ok = send_all(server, out, n) && (!extra_len || send_all(server, extra, extra_len));
	free(out);
	return ok;
}

static void handle(struct conn *c)
{
	struct hutch_proxy *p = c->p;
	struct attempt a = {.p = p, .t0 = hutch_now_us()};
	struct hutch_proxy_request r;
	char *buf = hutch_xmalloc(BUF_SIZE + 1);
	size_t got = 0;
	int status = 403;
	ssize_t head = read_head(p, c->client, buf, HEAD_MAX + 1, &got);

	snprintf(a.protocol, sizeof(a.protocol), "http");
	memset(&r, 0, sizeof(r));
	if (head < 0) {
		snprintf(a.host, sizeof(a.host), "?");
		deny(&a, c->client, got >= HEAD_MAX ? 400 : 0, "%s",
		     got >= HEAD_MAX ? "request head too large"
				     : "incomplete request (closed, too slow or stopped)");
		goto out;
	}
	bool parsed = hutch_proxy_parse_request(buf, &r);
	snprintf(a.protocol, sizeof(a.protocol), "%s", r.protocol[0] ? r.protocol : "http");
	snprintf(a.host, sizeof(a.host), "%s", r.host[0] ? r.host : "?");
	a.port = r.port;
	if (!parsed) {
		deny(&a, c->client, 400,
		     "not a proxy request (CONNECT host:port, or a full http:// URL)");
		goto out;
	}
	pthread_mutex_lock(&p->mu);
	bool allowed = hutch_net_policy_allows(&p->policy, a.host, (uint16_t)a.port);
	pthread_mutex_unlock(&p->mu);
	if (!allowed) {
		deny(&a, c->client, 403, "not in the allowlist");
		goto out;
	}
	int server = open_upstream(p, &a, &status);
	if (server < 0) {
		char why[sizeof(a.reason)];
		memcpy(why, a.reason, sizeof(why));
		deny(&a, c->client, status, "%s", why);
		goto out;
	}
	a.verdict = "allowed";
	snprintf(a.reason, sizeof(a.reason), "in the allowlist");
	if (r.connect) {
		static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
		/* bytes the client sent after the head belong to the tunnel */
		size_t early = got - (size_t)head;
		memmove(buf, buf + head, early);
		ssize_t n = -1;
		if (send_all(c->client, ok, sizeof(ok) - 1))
			n = check_tunnel(&a, c->client, buf, BUF_SIZE, early);
		if (n >= 0 && charge(&a, (uint64_t)n, true) && send_all(server, buf, (size_t)n))
			relay(&a, c->client, server);
	} else if (forward_http(&r, buf, (size_t)head, buf + head, got - (size_t)head, server)) {
		charge(&a, got, true);
		relay(&a, c->client, server);
	}
	close(server);
	if (strcmp(a.verdict, "denied") != 0) /* check_tunnel recorded its denial */
		record(&a);
out:
	free(buf);
	close(c->client);
}

static void *conn_main(void *arg)
{
	struct conn *c = arg;
	struct hutch_proxy *p = c->p;

	handle(c);
	pthread_mutex_lock(&p->mu);
	if (--p->active == 0)
		pthread_cond_broadcast(&p->quiet);
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

static void *acceptor_main(void *arg)
{
	struct hutch_proxy *p = arg;

	bool stopping = false;

	for (;;) {
		struct pollfd pfd[2] = {{p->lfd, POLLIN, 0}, {p->stop[0], POLLIN, 0}};
		/* Once stopped, connections still in the backlog are taken and
		 * recorded too: a program that connects and exits at once has
		 * still made those attempts. */
		int n = poll(pfd, stopping ? 1 : 2, stopping ? 0 : -1);
		if (n < 0 && errno != EINTR)
			return NULL;
		if (!stopping && pfd[1].revents) {
			stopping = true;
			continue;
		}
		if (!(pfd[0].revents & POLLIN)) {
			if (stopping)
				return NULL;
			continue;
		}
		int fd = accept4(p->lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0) {
			/* out of fds: wait for some to close rather than spin */
			if (errno == EMFILE || errno == ENFILE)
				(void)poll(NULL, 0, 10);
			continue;
		}
		pthread_mutex_lock(&p->mu);
		bool over = (uint64_t)p->nconns >= p->max_conns;
		pthread_mutex_unlock(&p->mu);
		if (over) {
			struct attempt a = {
				.p = p, .t0 = hutch_now_us(), .verdict = "rate_limited"};
			snprintf(a.protocol, sizeof(a.protocol), "http");
			snprintf(a.host, sizeof(a.host), "?");
			deny(&a, fd, 0, "more than %llu connections in one execution",
			     (unsigned long long)p->max_conns);
			close(fd);
			continue;
		}
		struct conn *c = hutch_xcalloc(1, sizeof(*c));
		c->p = p;
		c->client = fd;
		pthread_mutex_lock(&p->mu);
		p->active++;
		pthread_mutex_unlock(&p->mu);
		if (pthread_create(&c->thread, NULL, conn_main, c) != 0) {
			pthread_mutex_lock(&p->mu);
			p->active--;
			pthread_mutex_unlock(&p->mu);
			close(fd);
			free(c);
			continue;
		}
		pthread_mutex_lock(&p->mu);
		c->next = p->conns;
		p->conns = c;
		p->nconns++;
		pthread_mutex_unlock(&p->mu);
	}
}

struct hutch_proxy *hutch_proxy_start(int listen_fd, const struct hutch_net_policy *policy,
				      const struct hutch_proxy_caps *caps, const char *exec_id,
				      struct hutch_err *err)
{
	struct hutch_proxy *p = hutch_xcalloc(1, sizeof(*p));

	p->max_conns = caps && caps->connections ? caps->connections : MAX_CONNS;
	p->max_out = caps && caps->bytes_out ? caps->bytes_out : MAX_BYTES_OUT;
	p->max_in = caps && caps->bytes_in ? caps->bytes_in : MAX_BYTES_IN;

	p->lfd = listen_fd;
	p->policy = *policy;
	snprintf(p->exec_id, sizeof(p->exec_id), "%s", exec_id);
	p->ctx = json_pack("{s:s}", "execution_id", exec_id);
	p->log = json_array();
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->quiet, NULL);
	if (pipe2(p->stop, O_CLOEXEC) < 0) {
		hutch_err_set(err, errno, "proxy stop pipe");
		goto fail;
	}
	if (pthread_create(&p->acceptor, NULL, acceptor_main, p) != 0) {
		hutch_err_setx(err, EAGAIN, "cannot start the proxy thread");
		close(p->stop[0]);
		close(p->stop[1]);
		goto fail;
	}
	return p;
fail:
	json_decref(p->log);
	json_decref(p->ctx);
	pthread_mutex_destroy(&p->mu);
	close(listen_fd);
	free(p);
	return NULL;
}

json_t *hutch_proxy_stop(struct hutch_proxy *p)
{
	json_t *log;

	if (!p)
		return json_array();
	(void)!write(p->stop[1], "x", 1); /* wakes the acceptor and every tunnel */
	pthread_join(p->acceptor, NULL);
	close(p->lfd);
	for (struct conn *c = p->conns; c;) {
		struct conn *next = c->next;
		pthread_join(c->thread, NULL);
		free(c);
		c = next;
	}
	close(p->stop[0]);
	close(p->stop[1]);
	log = p->log;
	json_decref(p->ctx);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->quiet);
	free(p);
	return log;
}

void hutch_proxy_set_context(struct hutch_proxy *p, json_t *ctx)
{
	pthread_mutex_lock(&p->mu);
	json_decref(p->ctx);
	p->ctx = json_deep_copy(ctx);
	pthread_mutex_unlock(&p->mu);
}

void hutch_proxy_set_policy(struct hutch_proxy *p, const struct hutch_net_policy *policy)
{
	pthread_mutex_lock(&p->mu);
	p->policy = *policy;
	pthread_mutex_unlock(&p->mu);
}

json_t *hutch_proxy_log_since(struct hutch_proxy *p, size_t *mark)
{
	json_t *a = json_array();
	struct timespec until;

	if (!p)
		return a;
	/* a connection the program just closed may still be on its way to the
	 * log: give the proxy a moment (not forever: a background job may keep
	 * a tunnel open for hours) */
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_nsec += 200 * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&p->mu);
	while (p->active > 0 && pthread_cond_timedwait(&p->quiet, &p->mu, &until) == 0)
		;
	for (size_t i = *mark; i < json_array_size(p->log); i++)
		json_array_append_new(a, json_deep_copy(json_array_get(p->log, i)));
	*mark = json_array_size(p->log);
	pthread_mutex_unlock(&p->mu);
	return a;
}
