#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/http.h"
#include "api/http_routes.h"
#include "cli/cli.h"
#include "util/err.h"
#include "util/parse.h"

/*
 * hutch serve: the daemon (the same process, pools and sessions) with an
 * HTTP listener. Its own options are taken out of argv here; the rest are
 * the daemon's (cli/daemon.c).
 */

static const char serve_usage[] =
	"usage: hutch serve [options]\n"
	"\n"
	"The daemon plus the HTTP API (docs/http.md): REST + server-sent events.\n"
	"\n"
	"  --listen HOST:PORT   where to listen (default 127.0.0.1:7878; port 0 picks one)\n"
	"  --insecure-local     loopback clients may come without an API key\n"
	"  --max-body BYTES     cap on a request body (default 64M; suffixes K, M, G)\n"
	"  --idle-timeout SECS  close connections silent this long (default 30)\n"
	"  --print-routes       print every route (METHOD PATH) and exit\n"
	"and every option of `hutch daemon`: --socket, --state-dir (keys live there too),\n"
	"--preload, --pool, --pool-max, --log-level.\n"
	"Keys: hutch keys add NAME. Requests carry Authorization: Bearer KEY.\n";

static void on_listen(const char *url)
{
	fprintf(stderr, "hutch serve: listening on %s\n", url);
}

/* The value of an option given as "--opt VALUE" (*used becomes 1: the next
 * argument is taken) or "--opt=VALUE"; NULL when argv[i] is not opt. */
static const char *value_of(int argc, char **argv, int i, const char *opt, int *used)
{
	size_t n = strlen(opt);
	const char *arg = argv[i];

	*used = 0;
	if (!arg || strncmp(arg, opt, n) != 0)
		return NULL;
	if (arg[n] == '=')
		return arg + n + 1;
	if (arg[n] != '\0' || i + 1 >= argc)
		return NULL;
	*used = 1;
	return argv[i + 1];
}

/* 0 when argv[*i] was one of serve's (consumed), 1 when it is not, -1 on error. */
static int take_option(int argc, char **argv, int *i, struct hutch_http_opts *o)
{
	struct hutch_err err;
	const char *v;
	uint64_t n;
	int used = 0;

	if (strcmp(argv[*i], "--insecure-local") == 0) {
		o->insecure_local = true;
		return 0;
	}
	if ((v = value_of(argc, argv, *i, "--listen", &used)) != NULL) {
		*i += used;
		o->listen = v;
		return 0;
	}
	if ((v = value_of(argc, argv, *i, "--max-body", &used)) != NULL) {
		*i += used;
		if (hutch_parse_size(v, &n, &err) < 0 || n == 0)
			return fprintf(stderr, "hutch serve: --max-body: '%s' is not a size\n", v),
			       -1;
		o->max_body = n;
		return 0;
	}
	if ((v = value_of(argc, argv, *i, "--idle-timeout", &used)) != NULL) {
		*i += used;
		if (hutch_parse_count(v, &n, &err) < 0 || n == 0 || n > 86400)
			return fprintf(stderr,
				       "hutch serve: --idle-timeout: '%s' is not 1 to 86400 "
				       "seconds\n",
				       v),
			       -1;
		o->idle_timeout_s = (unsigned)n;
		return 0;
	}
	return 1;
}

int hutch_cmd_serve(int argc, char **argv)
{
	struct hutch_http_opts o = {"127.0.0.1:7878", false, 64ull << 20, 30, on_listen};
	char **rest = calloc((size_t)argc + 1, sizeof(*rest));
	int nrest = 0;
	int rc = 0;

	if (!rest)
		return HUTCH_EXIT_SANDBOX;
	for (int i = 0; i < argc && rc == 0; i++) {
		if (i > 0 && (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)) {
			fputs(serve_usage, stdout);
			rc = -2;
		} else if (i > 0 && strcmp(argv[i], "--print-routes") == 0) {
			char *text = hutch_routes_text();
			fputs(text, stdout);
			free(text);
			rc = -2;
		} else {
			int t = i == 0 ? 1 : take_option(argc, argv, &i, &o);
			if (t == 1)
				rest[nrest++] = argv[i];
			else if (t < 0)
				rc = -1;
		}
	}
	if (rc == 0)
		rc = hutch_cli_daemon(nrest, rest, &o);
	else
		rc = rc == -2 ? 0 : HUTCH_EXIT_SANDBOX;
	free(rest);
	return rc;
}
