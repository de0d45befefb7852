#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/keys.h"
#include "api/sockpath.h"
#include "cli/cli.h"
#include "util/err.h"
#include "util/parse.h"

/* hutch keys add|list|revoke: the API keys of `hutch serve`. */

static const char keys_usage[] =
	"usage: hutch keys add NAME [--max-sessions N] [--rate N/min] [--max-memory BYTES]\n"
	"       hutch keys list\n"
	"       hutch keys revoke NAME\n"
	"\n"
	"API keys of `hutch serve`, kept hashed (SHA-256) in STATE_DIR/keys.json.\n"
	"`add` prints the new key once, as the last word of its output.\n"
	"Limits (0 = none): --max-sessions live sessions (default 16), --rate\n"
	"executions per minute (default 600/min), --max-memory the sum of its live\n"
	"sessions' memory limits (default 16G).\n"
	"  --state-dir DIR   as `hutch daemon` (default $HUTCH_STATE_DIR, ...)\n";

static int parse_rate(const char *v, uint64_t *out)
{
	struct hutch_err err;
	char num[32];
	size_t n = strcspn(v, "/");

	if (n >= sizeof(num) || (v[n] && strcmp(v + n, "/min") != 0))
		return -1;
	snprintf(num, sizeof(num), "%.*s", (int)n, v);
	return hutch_parse_count(num, out, &err);
}

static int add_limit(int c, const char *v, struct hutch_key_limits *lim)
{
	struct hutch_err err;

	if (c == 's')
		return hutch_parse_count(v, &lim->max_sessions, &err);
	if (c == 'r')
		return parse_rate(v, &lim->rate_per_min);
	return hutch_parse_size(v, &lim->max_memory_bytes, &err);
}

static int list(const char *state)
{
	struct hutch_keyring kr;
	struct hutch_err err;

	if (hutch_keys_load(state, &kr, &err) < 0) {
		fprintf(stderr, "hutch keys: %s\n", err.msg);
		return 1;
	}
	printf("%-24s %12s %10s %16s\n", "NAME", "MAX_SESSIONS", "RATE/MIN", "MAX_MEMORY");
	for (size_t i = 0; i < kr.n; i++)
		printf("%-24s %12llu %10llu %16llu\n", kr.keys[i].name,
		       (unsigned long long)kr.keys[i].limits.max_sessions,
		       (unsigned long long)kr.keys[i].limits.rate_per_min,
		       (unsigned long long)kr.keys[i].limits.max_memory_bytes);
	hutch_keys_release(&kr);
	return 0;
}

static int run(const char *verb, const char *name, const char *state,
	       const struct hutch_key_limits *lim)
{
	struct hutch_err err;
	char key[80];

	if (strcmp(verb, "list") == 0)
		return list(state);
	if (!name) {
		fputs(keys_usage, stderr);
		return HUTCH_EXIT_SANDBOX;
	}
	if (strcmp(verb, "add") == 0 &&
	    hutch_keys_add(state, name, lim, key, sizeof(key), &err) == 0) {
		printf("key '%s' added; it is shown only now:\n%s\n", name, key);
		return 0;
	}
	if (strcmp(verb, "revoke") == 0 && hutch_keys_revoke(state, name, &err) == 0) {
		printf("key '%s' revoked\n", name);
		return 0;
	}
	if (strcmp(verb, "add") != 0 && strcmp(verb, "revoke") != 0)
		hutch_err_setx(&err, EINVAL, "unknown command '%s'", verb);
	fprintf(stderr, "hutch keys: %s\n", err.msg);
	return 1;
}

int hutch_cmd_keys(int argc, char **argv)
{
	static const struct option opts[] = {
		{"max-sessions", required_argument, NULL, 's'},
		{"rate", required_argument, NULL, 'r'},
		{"max-memory", required_argument, NULL, 'm'},
		{"state-dir", required_argument, NULL, 'd'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct hutch_key_limits lim = {HUTCH_KEY_DEFAULT_SESSIONS, HUTCH_KEY_DEFAULT_RATE,
				       HUTCH_KEY_DEFAULT_MEMORY};
	const char *state = NULL;
	char state_path[300];
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 'h') {
			fputs(keys_usage, stdout);
			return 0;
		}
		if (c == 'd') {
			state = optarg;
		} else if (c == '?' || add_limit(c, optarg, &lim) < 0) {
			fprintf(stderr, "hutch keys: option '%s' is unknown or its value is bad\n",
				argv[optind - 1]);
			return HUTCH_EXIT_SANDBOX;
		}
	}
	if (optind >= argc || optind + 2 < argc) {
		fputs(keys_usage, stderr);
		return HUTCH_EXIT_SANDBOX;
	}
	hutch_state_dir(state, state_path, sizeof(state_path));
	return run(argv[optind], optind + 1 < argc ? argv[optind + 1] : NULL, state_path, &lim);
}
