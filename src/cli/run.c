#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/client.h"
#include "api/sockpath.h"
#include "cli/cli.h"
#include "hutch.h"
#include "util/err.h"
#include "util/io.h"
#include "util/log.h"
#include "util/parse.h"

static const char run_usage[] =
	"usage: hutch run [options] [--] COMMAND [ARG...]\n"
	"       hutch run [options] --lang LANG [-c CODE | FILE | < code] [-- ARG...]\n"
	"\n"
	"Run one command, or one snippet of code, in a fresh isolated sandbox.\n"
	"\n"
	"  --lang LANG            python, node, bash or sh; code from -c, FILE or stdin\n"
	"  -c, --code CODE        the code to run (with --lang)\n"
	"  --json                 print the ExecResult as one JSON object\n"
	"  --timeout DURATION     wall-clock limit (default 30s; 250ms, 2m, 1h...)\n"
	"  --cpu-time DURATION    CPU time limit, user+sys of all processes (default none)\n"
	"  --memory SIZE          memory limit (default 512M; K, M, G suffixes)\n"
	"  --pids N               process/thread limit (default 128)\n"
	"  --cpus N               CPU bandwidth in cores, e.g. 0.5 (default no cap)\n"
	"  --output-limit SIZE    bytes kept per stream, head and tail (default 1M)\n"
	"  --output-limit-kill    kill the run when output passes the limit\n"
	"  --idle-output-timeout DURATION  stop the run after this long with no output\n"
	"  --file-size SIZE       largest file the program may write (default 1G)\n"
	"  --disk SIZE            writable space for /workspace and /tmp (default 1G)\n"
	"  --env NAME=VALUE       set a variable (repeatable); nothing else is inherited\n"
	"  --file HOST:SANDBOX    copy a host file into the sandbox (under /workspace)\n"
	"  --workdir DIR          working directory under /workspace (default /workspace)\n"
	"  --stdin FILE           file to give the program as stdin ('-' for ours)\n"
	"  --template NAME        root filesystem template (default and only: host)\n"
	"  --net POLICY           none (default: loopback only); "
	"allow:DOMAIN,*.DOMAIN,IP[:PORT]\n"
	"                         (egress only through hutch's proxy); or full (any public\n"
	"                         address, no ingress; see docs/network.md)\n"
	"  --net-allow-private    with full: private ranges, metadata and host addresses too\n"
	"  --net-connections N, --net-bytes-out SIZE, --net-bytes-in SIZE\n"
	"                         caps of allow: per run (default 256, 256M, 1G)\n"

	"  --label KEY=VALUE      echoed in the result (repeatable)\n"
	"  --cold                 do not use a running daemon (the fast path); build\n"
	"                         the sandbox from scratch (the cold path)\n"
	"  --log-level LEVEL      error, warn, info or debug\n"
	"  -h, --help             show this help\n"
	"\n"
	"Exit status: the program's own; 124 on timeout; 128+N when killed by\n"
	"signal N (137 for memory and output kills); 125 when hutch itself failed.\n";

enum opt {
	OPT_LANG = 256,
	OPT_JSON,
	OPT_TIMEOUT,
	OPT_CPU_TIME,
	OPT_MEMORY,
	OPT_PIDS,
	OPT_CPUS,
	OPT_OUTPUT_LIMIT,
	OPT_OUTPUT_KILL,
	OPT_IDLE_OUTPUT,
	OPT_NET_CONNS,
	OPT_NET_OUT,
	OPT_NET_IN,
	OPT_FILE_SIZE,
	OPT_DISK,
	OPT_ENV,
	OPT_FILE,
	OPT_WORKDIR,
	OPT_STDIN,
	OPT_TEMPLATE,
	OPT_NET,
	OPT_LABEL,
	OPT_COLD,
	OPT_NET_PRIVATE,
	OPT_LOG_LEVEL,
};

static const struct option options[] = {
	{"lang", required_argument, NULL, OPT_LANG},
	{"code", required_argument, NULL, 'c'},
	{"json", no_argument, NULL, OPT_JSON},
	{"timeout", required_argument, NULL, OPT_TIMEOUT},
	{"cpu-time", required_argument, NULL, OPT_CPU_TIME},
	{"memory", required_argument, NULL, OPT_MEMORY},
	{"pids", required_argument, NULL, OPT_PIDS},
	{"cpus", required_argument, NULL, OPT_CPUS},
	{"output-limit", required_argument, NULL, OPT_OUTPUT_LIMIT},
	{"output-limit-kill", no_argument, NULL, OPT_OUTPUT_KILL},
	{"idle-output-timeout", required_argument, NULL, OPT_IDLE_OUTPUT},
	{"net-connections", required_argument, NULL, OPT_NET_CONNS},
	{"net-bytes-out", required_argument, NULL, OPT_NET_OUT},
	{"net-bytes-in", required_argument, NULL, OPT_NET_IN},
	{"file-size", required_argument, NULL, OPT_FILE_SIZE},
	{"disk", required_argument, NULL, OPT_DISK},
	{"env", required_argument, NULL, OPT_ENV},
	{"file", required_argument, NULL, OPT_FILE},
	{"workdir", required_argument, NULL, OPT_WORKDIR},
	{"stdin", required_argument, NULL, OPT_STDIN},
	{"template", required_argument, NULL, OPT_TEMPLATE},
	{"net", required_argument, NULL, OPT_NET},
	{"label", required_argument, NULL, OPT_LABEL},
	{"cold", no_argument, NULL, OPT_COLD},
	{"net-allow-private", no_argument, NULL, OPT_NET_PRIVATE},
	{"log-level", required_argument, NULL, OPT_LOG_LEVEL},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

struct run_opts {
	struct hutch_exec_request req;
	const char *lang;
	const char *code;
	const char *stdin_path;
	bool json;
};

static int bad_value(const char *opt, const struct hutch_err *err)
{
	fprintf(stderr, "hutch run: --%s: %s\n", opt, err->msg);
	return -1;
}

static const char *opt_name(int code)
{
	for (const struct option *o = options; o->name; o++)
		if (o->val == code)
			return o->name;
	return "?";
}

static int add_host_file(struct hutch_exec_request *req, const char *spec)
{
	const char *colon = strrchr(spec, ':');
	struct hutch_err err;
	char *host;
	char *data = NULL;
	size_t len = 0;
	unsigned int mode = 0644;
	int rc;

	if (!colon || colon == spec || !colon[1]) {
		fprintf(stderr, "hutch run: --file: '%s' is not HOST_PATH:SANDBOX_PATH\n", spec);
		return -1;
	}
	host = strndup(spec, (size_t)(colon - spec));
	rc = host ? hutch_cli_read_file(host, HUTCH_DEFAULT_DISK * 16, &data, &len, &mode, &err)
		  : -1;
	free(host);
	if (rc < 0)
		return bad_value("file", &err);
	hutch_request_add_file(req, colon + 1, data, len, mode);
	free(data);
	return 0;
}

static int set_string(char **field, const char *value)
{
	free(*field);
	*field = strdup(value);
	return *field ? 0 : -1;
}

static int parse_limit(int code, const char *arg, struct hutch_limits *l, struct hutch_err *err)
{
	switch (code) {
	case OPT_TIMEOUT:
		return hutch_parse_duration_ms(arg, &l->wall_ms, err);
	case OPT_CPU_TIME:
		return hutch_parse_duration_ms(arg, &l->cpu_ms, err);
	case OPT_MEMORY:
		return hutch_parse_size(arg, &l->memory_bytes, err);
	case OPT_PIDS:
		return hutch_parse_count(arg, &l->pids, err);
	case OPT_OUTPUT_LIMIT:
		return hutch_parse_size(arg, &l->output_bytes, err);
	case OPT_FILE_SIZE:
		return hutch_parse_size(arg, &l->file_bytes, err);
	case OPT_DISK:
		return hutch_parse_size(arg, &l->disk_bytes, err);
	case OPT_IDLE_OUTPUT:
		return hutch_parse_duration_ms(arg, &l->idle_output_ms, err);
	case OPT_NET_CONNS:
		return hutch_parse_count(arg, &l->net_connections, err);
	case OPT_NET_OUT:
		return hutch_parse_size(arg, &l->net_bytes_out, err);
	case OPT_NET_IN:
		return hutch_parse_size(arg, &l->net_bytes_in, err);
	case OPT_CPUS: {
		char *end = NULL;
		errno = 0;
		l->cpus = strtod(arg, &end);
		if (errno || end == arg || *end || !(l->cpus > 0 && l->cpus <= 1024))
			return hutch_err_setx(err, EINVAL,
					      "'%s' is not a number of CPUs in (0, 1024]", arg);
		return 0;
	}
	default:
		return 1; /* not a limit */
	}
}

static int parse_one(struct run_opts *o, int code, const char *arg)
{
	struct hutch_err err;
	int rc = parse_limit(code, arg, &o->req.limits, &err);

	if (rc <= 0)
		return rc < 0 ? bad_value(opt_name(code), &err) : 0;
	switch (code) {
	case OPT_LANG:
		o->lang = arg;
		return 0;
	case 'c':
		o->code = arg;
		return 0;
	case OPT_JSON:
		o->json = true;
		return 0;
	case OPT_OUTPUT_KILL:
		o->req.limits.output_kill = true;
		return 0;
	case OPT_ENV:
		return hutch_request_add_env(&o->req, arg, &err) < 0 ? bad_value("env", &err) : 0;
	case OPT_LABEL:
		if (!strchr(arg, '=') || arg[0] == '=') {
			fprintf(stderr, "hutch run: --label: '%s' is not KEY=VALUE\n", arg);
			return -1;
		}
		o->req.labels = realloc(o->req.labels, (o->req.nlabels + 1) * sizeof(char *));
		o->req.labels[o->req.nlabels++] = strdup(arg);
		return 0;
	case OPT_FILE:
		return add_host_file(&o->req, arg);
	case OPT_WORKDIR:
		return set_string(&o->req.workdir, arg);
	case OPT_STDIN:
		o->stdin_path = arg;
		return 0;
	case OPT_TEMPLATE:
		return set_string(&o->req.template_name, arg);
	case OPT_NET:
		return set_string(&o->req.net, arg);
	case OPT_COLD:
		o->req.want_cold = true;
		return 0;
	case OPT_NET_PRIVATE:
		o->req.net_allow_private = true;
		return 0;
	case OPT_LOG_LEVEL:
		rc = hutch_log_parse_level(arg);
		if (rc < 0) {
			fprintf(stderr,
				"hutch run: --log-level: '%s' is not error, warn, info or debug\n",
				arg);
			return -1;
		}
		hutch_log_set_level((enum hutch_log_level)rc);
		return 0;
	default:
		return -1;
	}
}

/* Code for --lang: -c CODE, else a FILE positional, else stdin. */
static int load_code(struct run_opts *o, int *argi, int argc, char **argv)
{
	struct hutch_err err;
	char *data = NULL;
	size_t len = 0;
	const char *from = "-";

	if (o->code) {
		data = strdup(o->code);
		len = strlen(o->code);
	} else {
		if (*argi < argc)
			from = argv[(*argi)++];
		if (strcmp(from, "-") == 0 && isatty(0)) {
			fprintf(stderr,
				"hutch run: --lang %s needs code: -c CODE, a FILE, or stdin\n",
				o->lang);
			return -1;
		}
		if (hutch_cli_read_file(from, 64u << 20, &data, &len, NULL, &err) < 0) {
			fprintf(stderr, "hutch run: code: %s\n", err.msg);
			return -1;
		}
	}
	if (hutch_request_set_code(&o->req, o->lang, data ? data : "", len) < 0) {
		fprintf(stderr, "hutch run: --lang: '%s' is not one of: python, node, bash, sh\n",
			o->lang);
		free(data);
		return -1;
	}
	free(data);
	return 0;
}

static int load_stdin(struct run_opts *o)
{
	struct hutch_err err;
	char *data = NULL;
	size_t len = 0;

	if (!o->stdin_path)
		return 0;
	if (hutch_cli_read_file(o->stdin_path, HUTCH_MAX_STDIN, &data, &len, NULL, &err) < 0) {
		fprintf(stderr, "hutch run: --stdin: %s\n", err.msg);
		return -1;
	}
	o->req.stdin_data = (unsigned char *)data;
	o->req.stdin_len = len;
	return 0;
}

static int parse_args(struct run_opts *o, int argc, char **argv)
{
	int code;
	int argi;

	optind = 1;
	opterr = 0;
	while ((code = getopt_long(argc, argv, "+c:h", options, NULL)) != -1) {
		if (code == 'h') {
			fputs(run_usage, stdout);
			exit(0);
		}
		if (code == '?' || code == ':') {
			const char *bad = argv[optind - 1];
			if (optopt && optopt < 256)
				fprintf(stderr, "hutch run: option '-%c' %s\n", optopt,
					code == ':' ? "needs a value" : "is unknown");
			else
				fprintf(stderr,
					"hutch run: option '%s' is unknown or needs a value\n",
					bad);
			fputs("try 'hutch run --help'\n", stderr);
			return -1;
		}
		if (parse_one(o, code, optarg) < 0)
			return -1;
	}
	argi = optind;
	if (o->lang && load_code(o, &argi, argc, argv) < 0)
		return -1;
	if (!o->lang && o->code) {
		fputs("hutch run: -c needs --lang\n", stderr);
		return -1;
	}
	if (!o->lang && argi >= argc) {
		fputs("hutch run: missing command: hutch run [options] -- COMMAND [ARG...]\n",
		      stderr);
		return -1;
	}
	if (argi < argc)
		hutch_request_set_argv(&o->req, argv + argi);
	return load_stdin(o);
}

static void passthrough(void *ctx, int stream, const char *buf, size_t len)
{
	(void)ctx;
	(void)hutch_write_all(stream == 2 ? 2 : 1, buf, len);
}

static int exit_code_of(const struct hutch_exec_result *res)
{
	switch (res->status) {
	case HUTCH_STATUS_OK:
	case HUTCH_STATUS_ERROR:
		return res->exit_code >= 0 ? res->exit_code : 1;
	case HUTCH_STATUS_TIMEOUT:
		return HUTCH_EXIT_TIMEOUT;
	case HUTCH_STATUS_SANDBOX_ERROR:
		return HUTCH_EXIT_SANDBOX;
	case HUTCH_STATUS_OOM:
	case HUTCH_STATUS_OUTPUT_LIMIT:
	case HUTCH_STATUS_KILLED:
		return 128 + (res->signal ? res->signal : SIGKILL);
	}
	return 1;
}

static void explain(const struct hutch_exec_result *res)
{
	switch (res->status) {
	case HUTCH_STATUS_SANDBOX_ERROR:
		fprintf(stderr, "hutch: sandbox set-up failed at step '%s': %s\n", res->failed_step,
			res->failed_msg);
		break;
	case HUTCH_STATUS_TIMEOUT:
		fprintf(stderr, "hutch: killed: %s limit of %llu ms reached\n",
			strcmp(res->limit_hit, "cpu_time") == 0 ? "CPU time" : "wall-clock time",
			(unsigned long long)(strcmp(res->limit_hit, "cpu_time") == 0
						     ? res->limits.cpu_ms
						     : res->limits.wall_ms));
		break;
	case HUTCH_STATUS_OOM:
		fprintf(stderr, "hutch: killed: memory limit of %llu bytes reached\n",
			(unsigned long long)res->limits.memory_bytes);
		break;
	case HUTCH_STATUS_OUTPUT_LIMIT:
		fprintf(stderr, "hutch: killed: output passed the limit of %llu bytes\n",
			(unsigned long long)res->limits.output_bytes);
		break;
	case HUTCH_STATUS_OK:
	case HUTCH_STATUS_ERROR:
	case HUTCH_STATUS_KILLED:
		break;
	}
}

/* The few fields of an ExecResult JSON the CLI needs for its exit status
 * and messages (the daemon's answer). */
static void result_from_json(const char *text, struct hutch_exec_result *res)
{
	json_t *o = json_loads(text, 0, NULL);
	const char *status = json_string_value(json_object_get(o, "status"));
	json_t *se = json_object_get(o, "sandbox_error");
	json_t *lim = json_object_get(o, "limits");

	memset(res, 0, sizeof(*res));
	res->exit_code = -1;
	for (int s = HUTCH_STATUS_OK; s <= HUTCH_STATUS_SANDBOX_ERROR; s++)
		if (status && strcmp(status, hutch_status_name((enum hutch_status)s)) == 0)
			res->status = (enum hutch_status)s;
	if (json_is_integer(json_object_get(o, "exit_code")))
		res->exit_code = (int)json_integer_value(json_object_get(o, "exit_code"));
	res->signal = (int)json_integer_value(json_object_get(o, "signal"));
	snprintf(res->limit_hit, sizeof(res->limit_hit), "%s",
		 json_string_value(json_object_get(o, "limit_hit"))
			 ? json_string_value(json_object_get(o, "limit_hit"))
			 : "");
	res->limits.wall_ms = (uint64_t)json_integer_value(
		json_object_get(json_object_get(lim, "wall_ms"), "value"));
	res->limits.cpu_ms = (uint64_t)json_integer_value(
		json_object_get(json_object_get(lim, "cpu_ms"), "value"));
	res->limits.memory_bytes = (uint64_t)json_integer_value(
		json_object_get(json_object_get(lim, "memory_bytes"), "value"));
	res->limits.output_bytes = (uint64_t)json_integer_value(
		json_object_get(json_object_get(lim, "output_bytes"), "value"));
	if (se) {
		const char *step = json_string_value(json_object_get(se, "step"));
		const char *msg = json_string_value(json_object_get(se, "message"));
		snprintf(res->failed_step, sizeof(res->failed_step), "%s", step ? step : "?");
		snprintf(res->failed_msg, sizeof(res->failed_msg), "%s", msg ? msg : "?");
	}
	json_decref(o);
}

/* Through a daemon, when one is reachable: -1 means "none, go cold". */
static int run_via_daemon(struct run_opts *o, const struct hutch_run_hooks *hooks)
{
	char path[512];
	struct hutch_err err;
	struct hutch_exec_result res;
	char *json;
	int fd;
	int code;

	hutch_socket_path(NULL, path, sizeof(path));
	fd = hutch_client_connect(path);
	if (fd < 0)
		return -1;
	json = hutch_client_run(fd, &o->req, o->json ? NULL : hooks, &err);
	close(fd);
	if (!json) {
		fprintf(stderr, "hutch run: %s\n", err.msg);
		return HUTCH_EXIT_SANDBOX;
	}
	result_from_json(json, &res);
	if (o->json) {
		(void)hutch_write_all(1, json, strlen(json));
		(void)hutch_write_all(1, "\n", 1);
	} else {
		explain(&res);
	}
	free(json);
	code = exit_code_of(&res);
	return code;
}

int hutch_cmd_run(int argc, char **argv)
{
	struct run_opts o;
	struct hutch_exec_result res;
	struct hutch_run_hooks hooks = {passthrough, NULL};
	struct hutch_err err;
	int code;

	memset(&o, 0, sizeof(o));
	hutch_request_init(&o.req);
	if (parse_args(&o, argc, argv) < 0) {
		hutch_request_release(&o.req);
		return HUTCH_EXIT_SANDBOX;
	}
	/* A closed reader of our stdout must not kill us mid-teardown. */
	signal(SIGPIPE, SIG_IGN);
	if (!o.req.want_cold) {
		/* the request is checked here first, so bad input reads the same
		 * on both paths and never reaches the daemon */
		if (hutch_request_validate(&o.req, &err) < 0) {
			fprintf(stderr, "hutch run: %s\n", err.msg);
			hutch_request_release(&o.req);
			return HUTCH_EXIT_SANDBOX;
		}
		code = run_via_daemon(&o, &hooks);
		if (code >= 0) {
			hutch_request_release(&o.req);
			return code;
		}
	}
	if (hutch_run(&o.req, o.json ? NULL : &hooks, &res, &err) < 0) {
		fprintf(stderr, "hutch run: %s\n", err.msg);
		hutch_request_release(&o.req);
		return HUTCH_EXIT_SANDBOX;
	}
	if (o.json) {
		char *text = hutch_result_to_json(&res);
		if (text) {
			(void)hutch_write_all(1, text, strlen(text));
			(void)hutch_write_all(1, "\n", 1);
		}
		free(text);
	} else {
		explain(&res);
	}
	code = exit_code_of(&res);
	hutch_result_release(&res);
	hutch_request_release(&o.req);
	return code;
}
