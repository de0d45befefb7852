#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "api/daemon.h"
#include "api/http.h"
#include "api/sockpath.h"
#include "cli/cli.h"
#include "util/err.h"
#include "util/log.h"
#include "util/parse.h"

static const char daemon_usage[] =
	"usage: hutch daemon [options]\n"
	"\n"
	"Keep warm zygotes and pools of pre-isolated sandboxes, and serve runs over a\n"
	"unix socket. `hutch run` uses the daemon when it can reach it.\n"
	"\n"
	"  --socket PATH     where to listen (default: $HUTCH_SOCKET, else\n"
	"                    $XDG_RUNTIME_DIR/hutch.sock, else /run/hutch/hutch.sock\n"
	"                    for root, /tmp/hutch-UID/hutch.sock for others)\n"
	"  --state-dir DIR   sessions live here (created; default $HUTCH_STATE_DIR,\n"
	"                    /var/lib/hutch for root, ~/.local/state/hutch otherwise)\n"
	"  --preload MODS    Python modules the zygote imports up front, comma-separated\n"
	"                    (default: json,re,math,random,collections,itertools,\n"
	"                    functools,datetime,decimal,statistics)\n"
	"  --pool N          sandboxes kept ready (default 4; grows with load)\n"
	"  --pool-max N      cap on the pool (default 32)\n"
	"  --log-level L     error, warn, info or debug (default info)\n"
	"  -h, --help\n";

static void ready(const char *path)
{
	fprintf(stderr, "hutch daemon: listening on %s\n", path);
}

int hutch_cmd_daemon(int argc, char **argv)
{
	return hutch_cli_daemon(argc, argv, NULL);
}

/* `hutch daemon`, or with http the daemon of `hutch serve` (one process). */
int hutch_cli_daemon(int argc, char **argv, const struct hutch_http_opts *http)
{
	static const struct option opts[] = {
		{"socket", required_argument, NULL, 's'},
		{"state-dir", required_argument, NULL, 'd'},
		{"preload", required_argument, NULL, 'p'},
		{"pool", required_argument, NULL, 'n'},
		{"pool-max", required_argument, NULL, 'm'},
		{"log-level", required_argument, NULL, 'l'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct hutch_daemon_opts o = {
		.preload = "json,re,math,random,collections,itertools,functools,datetime,decimal,"
			   "statistics",
		.pool_min = 4,
		.pool_max = 32,
		.on_ready = ready,
		.http = http,
		.agent = http ? hutch_agent_serve : NULL, /* POST /v1/agent */
	};
	const char *sock = NULL;
	const char *state = NULL;
	char path[512];
	char state_path[300];
	struct hutch_err err;
	uint64_t n;
	int c;

	hutch_log_set_level(HUTCH_LOG_INFO);
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			sock = optarg;
			break;
		case 'd':
			state = optarg;
			break;
		case 'p':
			o.preload = optarg;
			break;
		case 'n':
		case 'm':
			if (hutch_parse_count(optarg, &n, &err) < 0 || n > 1024) {
				fprintf(stderr,
					"hutch daemon: --%s: '%s' is not a count up to 1024\n",
					c == 'n' ? "pool" : "pool-max", optarg);
				return HUTCH_EXIT_SANDBOX;
			}
			*(c == 'n' ? &o.pool_min : &o.pool_max) = (unsigned)n;
			break;
		case 'l':
			if (hutch_log_parse_level(optarg) < 0) {
				fprintf(stderr, "hutch daemon: --log-level: '%s' is unknown\n",
					optarg);
				return HUTCH_EXIT_SANDBOX;
			}
			hutch_log_set_level((enum hutch_log_level)hutch_log_parse_level(optarg));
			break;
		case 'h':
			if (!http)
				fputs(daemon_usage, stdout);
			return 0;
		default:
			fprintf(stderr, "hutch daemon: option '%s' is unknown or needs a value\n",
				argv[optind - 1]);
			return HUTCH_EXIT_SANDBOX;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "hutch daemon: unexpected argument '%s'\n", argv[optind]);
		return HUTCH_EXIT_SANDBOX;
	}
	if (o.pool_max < o.pool_min)
		o.pool_max = o.pool_min;
	hutch_socket_path(sock, path, sizeof(path));
	o.socket_path = path;
	hutch_state_dir(state, state_path, sizeof(state_path));
	o.state_dir = state_path;
	if (hutch_daemon_main(&o, &err) < 0) {
		fprintf(stderr, "hutch daemon: %s\n", err.msg);
		return 1;
	}
	return 0;
}
