#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent.h"
#include "cli/cli.h"
#include "util/parse.h"

/*
 * hutch agent: an English task in, code that ran and was verified out
 * (docs/agent.md). Progress lines go to stderr; the program's output, or
 * the whole trace with --json, to stdout. Exit 0 on success, 1 when the
 * pipeline failed, 125 when hutch itself did.
 */

static const char usage[] =
	"usage: hutch agent [options] TASK\n"
	"       hutch agent history [ID] [--limit N] [--json]\n"
	"       hutch agent stats [--json]\n"
	"options:\n"
	"  --lang python|node      the language (default python; the task may say)\n"
	"  --file PATH             copy a file into the workspace (repeatable)\n"
	"  --max-attempts N        attempts before giving up (default 3)\n"
	"  --timeout DUR           the run step's deadline (default 10s)\n"
	"  --install-timeout DUR   the install step's deadline (default 60s)\n"
	"  --json                  print the whole trace as one JSON document\n"
	"  --llm                   plan, code and debug with an OpenAI-compatible model\n"
	"  --model M, --coder-model M   models (else HUTCH_LLM_MODEL[_PLANNER|_CODER|_DEBUGGER])\n"
	"  --state-dir DIR         where the history lives (as hutch daemon)\n"
	"  -q, --quiet             no progress lines\n";

#define MAX_FILES 16

struct cli {
	struct agent_options opt;
	const char *files[MAX_FILES];
	bool json;
	int limit;
};

static int bad(const char *msg, const char *arg)
{
	fprintf(stderr, "hutch agent: %s%s%s\n%s", msg, arg ? " " : "", arg ? arg : "", usage);
	return HUTCH_EXIT_SANDBOX;
}

static int parse_ms(const char *s, uint64_t *out)
{
	struct hutch_err err;

	if (hutch_parse_duration_ms(s, out, &err) < 0 || *out == 0) {
		fprintf(stderr, "hutch agent: bad duration '%s'\n", s);
		return -1;
	}
	return 0;
}

static int parse(int argc, char **argv, struct cli *c)
{
	static const struct option lopts[] = {
		{"lang", required_argument, NULL, 'L'},
		{"file", required_argument, NULL, 'f'},
		{"max-attempts", required_argument, NULL, 'n'},
		{"timeout", required_argument, NULL, 'T'},
		{"install-timeout", required_argument, NULL, 'I'},
		{"json", no_argument, NULL, 'j'},
		{"llm", no_argument, NULL, 'l'},
		{"model", required_argument, NULL, 'm'},
		{"coder-model", required_argument, NULL, 'c'},
		{"state-dir", required_argument, NULL, 'S'},
		{"limit", required_argument, NULL, 'N'},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int ch;

	optind = 1;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "qh", lopts, NULL)) != -1) {
		switch (ch) {
		case 'L':
			c->opt.language = optarg;
			break;
		case 'f':
			if (c->opt.nfiles == MAX_FILES)
				return bad("too many --file options", NULL);
			if (access(optarg, R_OK) < 0) {
				fprintf(stderr, "hutch agent: --file '%s': %s\n", optarg,
					strerror(errno));
				return HUTCH_EXIT_SANDBOX;
			}
			c->files[c->opt.nfiles++] = optarg;
			break;
		case 'n':
			c->opt.max_attempts = (int)strtol(optarg, NULL, 10);
			if (c->opt.max_attempts < 1 || c->opt.max_attempts > 20)
				return bad("--max-attempts wants 1..20, not", optarg);
			break;
		case 'T':
			if (parse_ms(optarg, &c->opt.run_timeout_ms) < 0)
				return HUTCH_EXIT_SANDBOX;
			break;
		case 'I':
			if (parse_ms(optarg, &c->opt.install_timeout_ms) < 0)
				return HUTCH_EXIT_SANDBOX;
			break;
		case 'j':
			c->json = true;
			break;
		case 'l':
			c->opt.use_llm = true;
			break;
		case 'm':
			c->opt.model = optarg;
			break;
		case 'c':
			c->opt.coder_model = optarg;
			break;
		case 'S':
			c->opt.state_dir = optarg;
			break;
		case 'N':
			c->limit = (int)strtol(optarg, NULL, 10);
			break;
		case 'q':
			c->opt.quiet = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return -1;
		default:
			return bad("unknown option", argv[optind - 1]);
		}
	}
	return 0;
}

static void print_json(const json_t *o)
{
	char *text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);

	puts(text ? text : "null");
	free(text);
}

static int cmd_history(struct cli *c, int argc, char **argv)
{
	struct hutch_err err;
	struct agent_history *h = agent_history_open(c->opt.state_dir, &err);
	json_t *out;
	json_t *e;
	size_t i;

	if (!h) {
		fprintf(stderr, "hutch agent: %s\n", err.msg);
		return HUTCH_EXIT_SANDBOX;
	}
	out = optind < argc ? agent_history_show(h, argv[optind])
			    : agent_history_list(h, c->limit > 0 ? c->limit : 20);
	agent_history_close(h);
	if (!out) {
		fprintf(stderr, "hutch agent: no pipeline '%s' in the history\n", argv[optind]);
		return 1;
	}
	if (c->json || !json_is_array(out)) {
		print_json(out);
	} else {
		json_array_foreach(out, i, e)
		{
			printf("%s  %s  %-7s  %lld attempt(s)  %6lld ms  %s\n", agent_jstr(e, "id"),
			       agent_jstr(e, "started_at") ?: "", agent_jstr(e, "status") ?: "",
			       (long long)json_integer_value(json_object_get(e, "attempts")),
			       (long long)json_integer_value(json_object_get(e, "total_ms")),
			       agent_jstr(e, "task") ?: "");
		}
	}
	json_decref(out);
	return 0;
}

static int cmd_stats(struct cli *c)
{
	struct hutch_err err;
	struct agent_history *h = agent_history_open(c->opt.state_dir, &err);
	json_t *s;
	json_t *e;
	size_t i;

	if (!h) {
		fprintf(stderr, "hutch agent: %s\n", err.msg);
		return HUTCH_EXIT_SANDBOX;
	}
	s = agent_history_stats(h);
	agent_history_close(h);
	if (c->json) {
		print_json(s);
		json_decref(s);
		return 0;
	}
	printf("pipelines: %lld\nsuccess rate: %.1f%%\nattempts per success: %.2f\n"
	       "time per pipeline (ms): min %lld, p50 %lld, mean %.0f, p90 %lld, max %lld\n"
	       "error categories:\n",
	       (long long)json_integer_value(json_object_get(s, "pipelines")),
	       100.0 * json_number_value(json_object_get(s, "success_rate")),
	       json_number_value(json_object_get(s, "attempts_per_success")),
	       (long long)json_integer_value(json_object_get(s, "min_ms")),
	       (long long)json_integer_value(json_object_get(s, "p50_ms")),
	       json_number_value(json_object_get(s, "mean_ms")),
	       (long long)json_integer_value(json_object_get(s, "p90_ms")),
	       (long long)json_integer_value(json_object_get(s, "max_ms")));
	json_array_foreach(json_object_get(s, "error_categories"), i, e)
	{
		printf("  %-13s %lld (fixed %lld)\n", agent_jstr(e, "category") ?: "?",
		       (long long)json_integer_value(json_object_get(e, "count")),
		       (long long)json_integer_value(json_object_get(e, "fixed")));
	}
	json_decref(s);
	return 0;
}

/* People see the program's output, or why it failed. */
static int report(const json_t *trace, bool json)
{
	bool ok = strcmp(agent_jstr(trace, "status") ?: "", "success") == 0;
	const json_t *d = json_object_get(trace, "last_diagnosis");

	/* hutch failed (no sandbox), not the task: never blamed on the code */
	const char *broke = agent_jstr(trace, "error");

	if (json) {
		print_json(trace);
		return ok ? 0 : broke ? HUTCH_EXIT_SANDBOX : 1;
	}
	if (broke) {
		fprintf(stderr, "hutch agent: sandbox error: %s\n", broke);
		return HUTCH_EXIT_SANDBOX;
	}
	if (ok) {
		fputs(agent_jstr(trace, "output") ?: "", stdout);
		return 0;
	}
	fprintf(stderr, "hutch agent: failed after %lld attempt(s)",
		(long long)json_integer_value(json_object_get(trace, "attempts_used")));
	if (json_is_object(d))
		fprintf(stderr, ": %s: %s; fix: %s", agent_jstr(d, "category") ?: "?",
			agent_jstr(d, "root_cause") ?: "?", agent_jstr(d, "fix") ?: "none");
	fputc('\n', stderr);
	return 1;
}

int hutch_cmd_agent(int argc, char **argv)
{
	struct cli c = {0};
	struct hutch_err err = {0, ""};
	json_t *trace;
	int rc;

	c.opt.max_attempts = 3;
	c.opt.run_timeout_ms = 10000;
	c.opt.install_timeout_ms = 60000;
	c.opt.files = c.files;
	/* history and stats take their options after the subcommand */
	bool is_history = argc > 1 && strcmp(argv[1], "history") == 0;
	bool is_stats = argc > 1 && strcmp(argv[1], "stats") == 0;
	if (is_history || is_stats) {
		argc--;
		argv++;
	}
	rc = parse(argc, argv, &c);
	if (rc != 0)
		return rc < 0 ? 0 : rc;
	if (is_history)
		return cmd_history(&c, argc, argv);
	if (is_stats)
		return cmd_stats(&c);
	if (optind != argc - 1)
		return bad("wants one TASK (quote it)", NULL);
	c.opt.task = argv[optind];
	trace = hutch_agent_run(&c.opt, &err);
	if (!trace) {
		fprintf(stderr, "hutch agent: %s\n", err.msg);
		return HUTCH_EXIT_SANDBOX;
	}
	rc = report(trace, c.json);
	json_decref(trace);
	return rc;
}
