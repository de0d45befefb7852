#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/client.h"
#include "api/mcp.h"
#include "api/sockpath.h"
#include "cli/cli.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/io.h"
#include "util/log.h"
#include "util/mem.h"

/*
 * hutch mcp: the MCP server on stdio (docs/mcp.md). One JSON-RPC message
 * per line on stdin, one response per line on stdout, logs on stderr only:
 * stdout belongs to the protocol.
 */

static const char mcp_usage[] =
	"usage: hutch mcp [options]\n"
	"\n"
	"Serve the Model Context Protocol on stdin/stdout (newline-delimited JSON-RPC),\n"
	"for agents: claude mcp add hutch -- hutch mcp\n"
	"Tools: run_code, run_command, session_create, session_exec, session_files_read,\n"
	"session_files_write, session_list, session_kill (docs/mcp.md).\n"
	"\n"
	"  --socket PATH     the daemon to use (default as `hutch run` finds it); without a\n"
	"                    reachable daemon, runs and sessions happen in this process\n"
	"  --state-dir DIR   sessions live here when in-process (default $HUTCH_STATE_DIR,\n"
	"                    /var/lib/hutch for root, ~/.local/state/hutch otherwise)\n"
	"  --cold            do not use a daemon: cold-path runs, sessions in this process\n"
	"  --log-level L     error, warn, info or debug (default info)\n"
	"  -h, --help\n";

struct mcp_opts {
	const char *socket;
	const char *state_dir;
	bool cold;
};

static int parse_args(int argc, char **argv, struct mcp_opts *o)
{
	static const struct option opts[] = {
		{"socket", required_argument, NULL, 's'},
		{"state-dir", required_argument, NULL, 'd'},
		{"cold", no_argument, NULL, 'c'},
		{"log-level", required_argument, NULL, 'l'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 's') {
			o->socket = optarg;
		} else if (c == 'd') {
			o->state_dir = optarg;
		} else if (c == 'c') {
			o->cold = true;
		} else if (c == 'l' && hutch_log_parse_level(optarg) >= 0) {
			hutch_log_set_level((enum hutch_log_level)hutch_log_parse_level(optarg));
		} else if (c == 'h') {
			fputs(mcp_usage, stdout);
			exit(0);
		} else {
			fprintf(stderr, "hutch mcp: option '%s' is unknown or has a bad value\n",
				argv[optind - 1]);
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "hutch mcp: unexpected argument '%s'\n", argv[optind]);
		return -1;
	}
	return 0;
}

/*
 * Tool calls run on threads of their own, up to MAX_CALLS at once, so the
 * calls an agent makes in parallel run in parallel (the handler and both
 * backends are thread-safe); everything else is answered at once, in order,
 * on the reading thread. Responses are whole lines, one writer at a time.
 */
#define MAX_CALLS 8

struct stdio_server {
	struct hutch_mcp *m;
	pthread_mutex_t lock; /* stdout, inflight, is_broken */
	pthread_cond_t done;
	unsigned inflight;
	bool is_broken; /* stdout is gone: the client left */
};

struct call {
	struct stdio_server *s;
	char *msg;
	size_t len;
};

/* Write a response (consumed; NULL: nothing to send) as one line. */
static void send_reply(struct stdio_server *s, char *reply)
{
	size_t n;

	if (!reply)
		return;
	n = strlen(reply);
	reply[n] = '\n'; /* replaces the NUL */
	pthread_mutex_lock(&s->lock);
	if (!s->is_broken && hutch_write_all(1, reply, n + 1) < 0)
		s->is_broken = true;
	pthread_mutex_unlock(&s->lock);
	free(reply);
}

static void *call_main(void *arg)
{
	struct call *c = arg;
	struct stdio_server *s = c->s;

	send_reply(s, hutch_mcp_handle(s->m, c->msg, c->len));
	free(c->msg);
	free(c);
	pthread_mutex_lock(&s->lock);
	s->inflight--;
	pthread_cond_broadcast(&s->done);
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* A tools/call request (it has an id): worth a thread. */
static bool is_tool_call(const char *msg, size_t len)
{
	json_t *o = json_loadb(msg, len, 0, NULL);
	bool yes = json_is_object(o) && json_object_get(o, "id") &&
		   strcmp(json_string_value(json_object_get(o, "method")) ?: "", "tools/call") == 0;

	json_decref(o);
	return yes;
}

static void start_call(struct stdio_server *s, const char *msg, size_t len)
{
	struct call *c = hutch_xmalloc(sizeof(*c));
	pthread_attr_t attr;
	pthread_t t;
	int rc;

	c->s = s;
	c->msg = hutch_xmemdup(msg, len);
	c->len = len;
	pthread_mutex_lock(&s->lock);
	while (s->inflight >= MAX_CALLS)
		pthread_cond_wait(&s->done, &s->lock);
	s->inflight++;
	pthread_mutex_unlock(&s->lock);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&t, &attr, call_main, c);
	pthread_attr_destroy(&attr);
	if (rc != 0)
		call_main(c); /* no thread to be had: answer in line */
}

/* Answer one line; -1 when stdout is gone (the client left). */
static int answer(struct stdio_server *s, const char *line, size_t len, bool is_too_long)
{
	bool is_broken;

	while (len && (line[len - 1] == '\r' || line[len - 1] == ' ' || line[len - 1] == '\t'))
		len--;
	if (is_too_long) {
		char msg[128];
		snprintf(msg, sizeof(msg), "message over the limit of %u bytes (discarded)",
			 HUTCH_MCP_MAX_MESSAGE);
		hutch_log(HUTCH_LOG_WARN, "mcp: %s", msg);
		send_reply(s, hutch_mcp_error_response(-32600, msg));
	} else if (len && is_tool_call(line, len)) {
		start_call(s, line, len);
	} else if (len) { /* blank lines between messages are harmless */
		send_reply(s, hutch_mcp_handle(s->m, line, len));
	}
	pthread_mutex_lock(&s->lock);
	is_broken = s->is_broken;
	pthread_mutex_unlock(&s->lock);
	return is_broken ? -1 : 0;
}

/* Read stdin line by line until EOF. A line past the limit is not kept:
 * its bytes are dropped as they come, and it gets one error response. */
static int serve_stdio(struct stdio_server *s)
{
	struct hutch_buf line = HUTCH_BUF_INIT;
	bool is_too_long = false;
	char chunk[65536];
	ssize_t n;
	int rc = 0;

	while (rc == 0 && (n = read(0, chunk, sizeof(chunk))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			hutch_log_errno(HUTCH_LOG_ERROR, "mcp: read stdin");
			rc = -1;
			break;
		}
		const char *p = chunk;
		const char *end = chunk + n;
		while (rc == 0 && p < end) {
			const char *nl = memchr(p, '\n', (size_t)(end - p));
			size_t take = (size_t)((nl ? nl : end) - p);
			if (!is_too_long && line.len + take > HUTCH_MCP_MAX_MESSAGE)
				is_too_long = true;
			if (!is_too_long)
				hutch_buf_append(&line, p, take);
			p += take;
			if (!nl)
				break;
			p++;
			rc = answer(s, line.data ? line.data : "", line.len, is_too_long);
			line.len = 0;
			is_too_long = false;
		}
	}
	if (rc == 0 && (line.len || is_too_long)) /* a last message without its newline */
		rc = answer(s, line.data, line.len, is_too_long);
	hutch_buf_release(&line);
	/* every call still running gets its answer before we stop */
	pthread_mutex_lock(&s->lock);
	while (s->inflight)
		pthread_cond_wait(&s->done, &s->lock);
	pthread_mutex_unlock(&s->lock);
	return rc;
}

int hutch_cmd_mcp(int argc, char **argv)
{
	struct mcp_opts o = {NULL, NULL, false};
	struct hutch_mcp_local local = {NULL, NULL};
	struct hutch_mcp_backend backend;
	struct hutch_err err = {0, ""};
	char sock[512];
	char state[300];
	int fd = -1;

	hutch_log_set_level(HUTCH_LOG_INFO);
	if (parse_args(argc, argv, &o) < 0)
		return HUTCH_EXIT_SANDBOX;
	/* a client that closes our stdout must not kill us mid-teardown */
	signal(SIGPIPE, SIG_IGN);
	hutch_socket_path(o.socket, sock, sizeof(sock));
	if (!o.cold)
		fd = hutch_client_connect(sock);
	if (fd >= 0) {
		close(fd);
		backend = hutch_mcp_daemon_backend(sock);
		fprintf(stderr, "hutch mcp: using the daemon at %s\n", sock);
	} else {
		hutch_state_dir(o.state_dir, state, sizeof(state));
		local.sessions = hutch_sessions_open(state, &err);
		if (!local.sessions)
			hutch_log(HUTCH_LOG_WARN, "mcp: no sessions: %s", err.msg);
		backend = hutch_mcp_local_backend(&local);
		fprintf(stderr, "hutch mcp: in-process (%s; cold-path runs, sessions under %s)\n",
			o.cold ? "--cold" : "no daemon reachable", state);
	}
	struct stdio_server s = {hutch_mcp_new(&backend), PTHREAD_MUTEX_INITIALIZER,
				 PTHREAD_COND_INITIALIZER, 0, false};
	int rc = serve_stdio(&s);
	hutch_mcp_free(s.m);
	hutch_sessions_close(local.sessions);
	return rc < 0 ? 1 : 0;
}
