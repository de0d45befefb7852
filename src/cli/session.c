#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/client.h"
#include "api/sockpath.h"
#include "cli/cli.h"
#include "util/err.h"
#include "util/parse.h"
#include "session/files.h"
#include "session/session.h"
#include "util/buf.h"
#include "util/text.h"

/*
 * hutch session SUBCOMMAND: a thin client of the daemon's session
 * operations (docs/sessions.md). Every subcommand builds one JSON request,
 * sends it, and prints the reply for people (or whole, with --json).
 */

static const char usage[] =
	"usage: hutch session new --lang python|node|bash [--memory SIZE] [--pids N]\n"
	"                         [--disk SIZE] [--timeout DUR] [--idle-timeout DUR]\n"
	"                         [--ttl DUR] [--env NAME=VALUE]... [--net none|allow:LIST|full]\n"
	"                         [--net-allow-private]\n"
	"       hutch session net ID none|allow:LIST        (change a live session's policy)\n"
	"       hutch session exec ID CODE|-   [--timeout DUR]  (the kernel's language)\n"
	"       hutch session sh ID COMMAND    [--timeout DUR]  (bash -c in the session)\n"
	"                         [--idle-output-timeout DUR] [--tty] [--background]\n"
	"       hutch session cmd ID CMD_ID poll|wait|attach|signal SIG|stdin [DATA] [--close]\n"
	"                                   |resize ROWSxCOLS\n"
	"       hutch session commands ID\n"
	"       hutch session files ID write PATH [DATA | --from FILE]\n"
	"       hutch session files ID read|ls|stat|mkdir PATH\n"
	"       hutch session files ID rm PATH [-r]   |   mv FROM TO\n"
	"       hutch session upload ID LOCAL REMOTE    (a file, or a directory as tar)\n"
	"       hutch session download ID REMOTE LOCAL\n"
	"       hutch session snapshot ID NAME | restore NAME | snapshots | snapshot-rm NAME\n"
	"       hutch session pause|resume|reset|info|kill ID\n"
	"       hutch session list\n"
	"Every subcommand takes --json (print the daemon's reply as is).\n"
	"The daemon is found as `hutch run` finds it ($HUTCH_SOCKET, see hutch daemon).\n";

struct opts {
	bool json;
	bool recursive;
	bool close;
	const char *from;
	json_t *req;
};

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "hutch session: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return HUTCH_EXIT_SANDBOX;
}

static void print_stream(void *ctx, int stream, const char *buf, size_t len)
{
	(void)ctx;
	fwrite(buf, 1, len, stream == 2 ? stderr : stdout);
	fflush(stream == 2 ? stderr : stdout);
}

/* Send req (consumed); the reply, or NULL after printing why. */
static json_t *call(json_t *req, bool stream)
{
	char path[512];
	struct hutch_err err = {0, ""};
	struct hutch_run_hooks hooks = {print_stream, NULL, 0};
	char *text = json_dumps(req, JSON_COMPACT);
	char *reply;
	int fd;

	json_decref(req);
	hutch_socket_path(NULL, path, sizeof(path));
	fd = hutch_client_connect(path);
	if (fd < 0) {
		fprintf(stderr,
			"hutch session: no daemon at %s (%s); start one with `hutch daemon`\n",
			path, strerror(errno));
		free(text);
		return NULL;
	}
	reply = hutch_client_session(fd, text, stream ? &hooks : NULL, &err);
	close(fd);
	free(text);
	if (!reply) {
		fprintf(stderr, "hutch session: %s\n", err.msg);
		return NULL;
	}
	json_t *o = json_loads(reply, 0, NULL);
	free(reply);
	return o;
}

/* The daemon's refusal, if the reply is one. */
static bool refused(json_t *reply)
{
	json_t *e = json_object_get(reply, "error");

	if (!json_is_object(e) || json_object_get(reply, "status"))
		return false;
	fprintf(stderr, "hutch session: %s\n",
		json_string_value(json_object_get(e, "message")) ?: "refused");
	return true;
}

static void print_json(json_t *o)
{
	char *text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);

	puts(text ? text : "null");
	free(text);
}

/* The exit code of an exec or sh: the program's, 124 on timeout. */
static int result_code(json_t *res)
{
	const char *status = json_string_value(json_object_get(res, "status")) ?: "";
	json_t *code = json_object_get(res, "exit_code");
	json_t *sig = json_object_get(res, "signal");

	if (strcmp(status, "timeout") == 0)
		return HUTCH_EXIT_TIMEOUT;
	if (json_is_integer(sig) && json_integer_value(sig) > 0 && !json_is_integer(code))
		return 128 + (int)json_integer_value(sig); /* as a shell reports it */
	if (json_is_integer(code))
		return (int)json_integer_value(code) & 0xff;
	return strcmp(status, "ok") == 0 ? 0 : 1;
}

/* exec and sh: output was streamed; then the value and notes, REPL-style. */
static int print_result(json_t *res)
{
	const char *status = json_string_value(json_object_get(res, "status")) ?: "";
	json_t *value = json_object_get(res, "value");
	const char *note = json_string_value(json_object_get(res, "note"));
	json_t *displays = json_object_get(res, "display");
	size_t i;
	json_t *d;

	if (json_is_object(value)) {
		const char *plain = json_string_value(json_object_get(value, "text/plain"));
		if (plain)
			printf("%s\n", plain);
	}
	json_array_foreach(displays, i, d)
	{
		const char *plain = json_string_value(json_object_get(d, "text/plain"));
		printf("[display %zu: %s]\n", i + 1, plain ? plain : "rich output; see --json");
	}
	if (note)
		fprintf(stderr, "hutch: %s\n", note);
	if (strcmp(status, "timeout") == 0)
		fprintf(stderr, "hutch: the call timed out (interpreter state is kept)\n");
	else if (strcmp(status, "oom") == 0)
		fprintf(stderr, "hutch: the session hit its memory limit\n");
	else if (strcmp(status, "sandbox_error") == 0)
		fprintf(stderr, "hutch: %s\n",
			json_string_value(json_object_get(json_object_get(res, "error"), "message"))
				?: "sandbox error");
	return result_code(res);
}

static int set_duration(json_t *o, const char *key, const char *s)
{
	uint64_t v;
	struct hutch_err err;

	if (hutch_parse_duration_ms(s, &v, &err) < 0)
		return fail("%s", err.msg);
	json_object_set_new(o, key, json_integer((json_int_t)v));
	return 0;
}

static int set_size(json_t *o, const char *key, const char *s)
{
	uint64_t v;
	struct hutch_err err;

	if (hutch_parse_size(s, &v, &err) < 0)
		return fail("%s", err.msg);
	json_object_set_new(o, key, json_integer((json_int_t)v));
	return 0;
}

/* Options shared by the subcommands; positional arguments stay in argv. */
static int parse_opts(int argc, char **argv, struct opts *o, json_t *limits)
{
	static const struct option lopts[] = {
		{"json", no_argument, NULL, 'j'},
		{"lang", required_argument, NULL, 'L'},
		{"memory", required_argument, NULL, 'M'},
		{"pids", required_argument, NULL, 'P'},
		{"disk", required_argument, NULL, 'D'},
		{"timeout", required_argument, NULL, 'T'},
		{"idle-timeout", required_argument, NULL, 'I'},
		{"ttl", required_argument, NULL, 'X'},
		{"env", required_argument, NULL, 'e'},
		{"from", required_argument, NULL, 'f'},
		{"idle-output-timeout", required_argument, NULL, 'O'},
		{"tty", no_argument, NULL, 't'},
		{"background", no_argument, NULL, 'b'},
		{"close", no_argument, NULL, 'C'},
		{"net", required_argument, NULL, 'N'},
		{"net-allow-private", no_argument, NULL, 'V'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	uint64_t n;
	struct hutch_err err;
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "rh", lopts, NULL)) != -1) {
		int rc = 0;
		switch (c) {
		case 'j':
			o->json = true;
			break;
		case 'r':
			o->recursive = true;
			break;
		case 'L':
			json_object_set_new(o->req, "language", json_string(optarg));
			break;
		case 'M':
			rc = set_size(limits, "memory_bytes", optarg);
			break;
		case 'D':
			rc = set_size(limits, "disk_bytes", optarg);
			break;
		case 'P':
			if (hutch_parse_count(optarg, &n, &err) < 0)
				return fail("--pids: %s", err.msg);
			json_object_set_new(limits, "pids", json_integer((json_int_t)n));
			break;
		case 'T':
			rc = set_duration(o->req, "timeout_ms", optarg);
			break;
		case 'I':
			rc = set_duration(o->req, "idle_timeout_ms", optarg);
			break;
		case 'X':
			rc = set_duration(o->req, "ttl_ms", optarg);
			break;
		case 'e': {
			const char *eq = strchr(optarg, '=');
			if (!eq)
				return fail("--env '%s': expected NAME=VALUE", optarg);
			json_t *env = json_object_get(o->req, "env");
			if (!env)
				json_object_set_new(o->req, "env", env = json_object());
			char name[256];
			snprintf(name, sizeof(name), "%.*s", (int)(eq - optarg), optarg);
			json_object_set_new(env, name, json_string(eq + 1));
			break;
		}
		case 'f':
			o->from = optarg;
			break;
		case 'O':
			rc = set_duration(o->req, "idle_output_timeout_ms", optarg);
			break;
		case 't':
			json_object_set_new(o->req, "tty", json_true());
			break;
		case 'b':
			json_object_set_new(o->req, "background", json_true());
			break;
		case 'C':
			o->close = true;
			break;
		case 'N':
			json_object_set_new(o->req, "network", json_string(optarg));
			break;
		case 'V':
			json_object_set_new(o->req, "network_allow_private", json_true());
			break;
		case 'h':
			fputs(usage, stdout);
			exit(0);
		default:
			return fail("option '%s' is unknown or needs a value", argv[optind - 1]);
		}
		if (rc)
			return rc;
	}
	return 0;
}

static int files_cmd(struct opts *o, const char *id, int argc, char **argv)
{
	static const char *const actions[][2] = {
		{"write", "write"}, {"read", "read"}, {"ls", "list"}, {"stat", "stat"},
		{"mkdir", "mkdir"}, {"rm", "remove"}, {"mv", "move"}};
	const char *action = NULL;

	if (argc < 2)
		return fail("%s", "files needs an action and a path");
	for (size_t i = 0; i < sizeof(actions) / sizeof(actions[0]); i++)
		if (strcmp(argv[0], actions[i][0]) == 0)
			action = actions[i][1];
	if (!action)
		return fail("files: unknown action '%s'", argv[0]);
	json_object_set_new(o->req, "op", json_string("session.files"));
	json_object_set_new(o->req, "id", json_string(id));
	json_object_set_new(o->req, "action", json_string(action));
	json_object_set_new(o->req, "path", json_string(argv[1]));
	if (strcmp(action, "move") == 0) {
		if (argc < 3)
			return fail("%s", "files mv needs FROM and TO");
		json_object_set_new(o->req, "to", json_string(argv[2]));
	}
	if (strcmp(action, "remove") == 0 && o->recursive)
		json_object_set_new(o->req, "recursive", json_true());
	if (strcmp(action, "write") == 0) {
		char *data = NULL;
		size_t len = 0;
		struct hutch_err err;
		if (o->from &&
		    hutch_cli_read_file(o->from, 256u << 20, &data, &len, NULL, &err) < 0)
			return fail("%s", err.msg);
		if (!o->from && argc >= 3) {
			data = strdup(argv[2]);
			len = strlen(data);
		} else if (!o->from &&
			   hutch_cli_read_file("-", 256u << 20, &data, &len, NULL, &err) < 0) {
			return fail("%s", err.msg);
		}
		char *b64 = hutch_base64_encode(data ? data : "", len);
		json_object_set_new(o->req, "data_base64", json_string(b64));
		free(b64);
		free(data);
	}
	json_t *reply = call(json_incref(o->req), false);
	if (!reply)
		return HUTCH_EXIT_SANDBOX;
	int rc = refused(reply) ? 1 : 0;
	if (rc == 0 && o->json) {
		print_json(reply);
	} else if (rc == 0 && strcmp(action, "read") == 0) {
		const char *b64 = json_string_value(json_object_get(reply, "data_base64"));
		size_t len = 0;
		unsigned char *data = b64 ? hutch_base64_decode(b64, strlen(b64), &len) : NULL;
		if (data)
			fwrite(data, 1, len, stdout);
		free(data);
	} else if (rc == 0 && strcmp(action, "list") == 0) {
		size_t i;
		json_t *e;
		json_array_foreach(json_object_get(reply, "entries"), i, e)
		{
			printf("%-7s %s %10lld  %s\n",
			       json_string_value(json_object_get(e, "type")) ?: "?",
			       json_string_value(json_object_get(e, "mode")) ?: "?",
			       (long long)json_integer_value(json_object_get(e, "size")),
			       json_string_value(json_object_get(e, "name")) ?: "?");
		}
	} else if (rc == 0 && strcmp(action, "stat") == 0) {
		print_json(json_object_get(reply, "stat"));
	}
	json_decref(reply);
	return rc;
}

/* upload: a file goes as a files write, a directory as a tar of it */
static int upload_cmd(struct opts *o, const char *id, const char *local, const char *remote)
{
	struct stat st;
	struct hutch_err err = {0, ""};

	if (stat(local, &st) < 0)
		return fail("upload: '%s': %s", local, strerror(errno));
	if (!S_ISDIR(st.st_mode)) {
		char *argv[] = {"write", (char *)remote, NULL};
		o->from = local;
		return files_cmd(o, id, 2, argv);
	}
	hutch_cli_tar_ensure();
	int root = open(local, O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct hutch_buf tar = HUTCH_BUF_INIT;
	if (root < 0 || hutch_cli_tar_pack(root, &tar, &err) < 0) {
		if (root >= 0)
			close(root);
		hutch_buf_release(&tar);
		return fail("upload: '%s': %s", local, root < 0 ? strerror(errno) : err.msg);
	}
	close(root);
	char *b64 = hutch_base64_encode(tar.data, tar.len);
	hutch_buf_release(&tar);
	json_object_set_new(o->req, "op", json_string("session.files"));
	json_object_set_new(o->req, "id", json_string(id));
	json_object_set_new(o->req, "action", json_string("upload"));
	json_object_set_new(o->req, "path", json_string(remote));
	json_object_set_new(o->req, "data_base64", json_string(b64));
	free(b64);
	json_t *reply = call(json_incref(o->req), false);
	int rc = !reply ? HUTCH_EXIT_SANDBOX : refused(reply) ? 1 : 0;
	json_decref(reply);
	return rc;
}

/* Extract a tar that came from a sandbox: every name is checked and
 * created in-root by files.c (never libarchive's disk writer). */
static int extract_local(const char *dir, const void *data, size_t len, struct hutch_err *err)
{
	int fd = memfd_create("hutch-download", MFD_CLOEXEC);
	int root;
	int rc = -1;

	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return hutch_err_set(err, errno, "mkdir '%s'", dir);
	root = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || root < 0 || write(fd, data, len) != (ssize_t)len ||
	    lseek(fd, 0, SEEK_SET) != 0)
		hutch_err_set(err, errno, "prepare '%s'", dir);
	else
		rc = hutch_cli_tar_unpack(root, fd, err);
	if (fd >= 0)
		close(fd);
	if (root >= 0)
		close(root);
	return rc;
}

static int download_cmd(struct opts *o, const char *id, const char *remote, const char *local)
{
	json_t *req = json_pack("{s:s,s:s,s:s,s:s}", "op", "session.files", "id", id, "action",
				"stat", "path", remote);
	json_t *reply = call(req, false);
	struct hutch_err err = {0, ""};
	int rc = 0;

	(void)o;
	if (!reply)
		return HUTCH_EXIT_SANDBOX;
	if (refused(reply))
		return json_decref(reply), 1;
	bool is_dir =
		strcmp(json_string_value(json_object_get(json_object_get(reply, "stat"), "type"))
			       ?: "",
		       "dir") == 0;
	json_decref(reply);
	if (is_dir)
		hutch_cli_tar_ensure();
	req = json_pack("{s:s,s:s,s:s,s:s}", "op", "session.files", "id", id, "action",
			is_dir ? "download" : "read", "path", remote);
	reply = call(req, false);
	if (!reply)
		return HUTCH_EXIT_SANDBOX;
	if (refused(reply))
		return json_decref(reply), 1;
	const char *b64 =
		json_string_value(json_object_get(reply, is_dir ? "tar_base64" : "data_base64"));
	size_t len = 0;
	unsigned char *data = b64 ? hutch_base64_decode(b64, strlen(b64), &len) : NULL;
	if (!data) {
		rc = fail("%s", "download: the daemon sent no data");
	} else if (is_dir) {
		if (extract_local(local, data, len, &err) < 0)
			rc = fail("download: %s", err.msg);
	} else {
		FILE *f = fopen(local, "wbe");
		if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0)
			rc = fail("download: write '%s': %s", local, strerror(errno));
	}
	free(data);
	json_decref(reply);
	return rc;
}

/* hutch session cmd ID CMD_ID ACTION [ARG]: a background command */
static int cmd_cmd(struct opts *o, int argc, char **argv)
{
	if (argc < 3)
		return fail("%s", "cmd needs ID, CMD_ID and an action");
	const char *action = argv[2];
	bool follow = strcmp(action, "attach") == 0;
	json_object_set_new(o->req, "op", json_string("session.command"));
	json_object_set_new(o->req, "id", json_string(argv[0]));
	json_object_set_new(o->req, "command_id", json_string(argv[1]));
	json_object_set_new(o->req, "action", json_string(action));
	if (strcmp(action, "signal") == 0) {
		if (argc < 4)
			return fail("%s", "signal needs a signal (INT, TERM, KILL...)");
		json_object_set_new(o->req, "signal", json_string(argv[3]));
	} else if (strcmp(action, "stdin") == 0) {
		const char *data = argc >= 4 ? argv[3] : "";
		char *b64 = hutch_base64_encode(data, strlen(data));
		json_object_set_new(o->req, "data_base64", json_string(b64));
		free(b64);
		if (o->close)
			json_object_set_new(o->req, "close", json_true());
	} else if (strcmp(action, "resize") == 0) {
		char *end = NULL;
		unsigned long rows = argc >= 4 ? strtoul(argv[3], &end, 10) : 0;
		unsigned long cols = end && *end == 'x' ? strtoul(end + 1, &end, 10) : 0;
		if (!rows || !cols || !end || *end || rows > 1000 || cols > 1000)
			return fail("%s", "resize needs ROWSxCOLS, e.g. 40x120");
		json_object_set_new(o->req, "rows", json_integer((json_int_t)rows));
		json_object_set_new(o->req, "cols", json_integer((json_int_t)cols));
	} else if (follow || strcmp(action, "wait") == 0) {
		if (!json_object_get(o->req, "timeout_ms")) /* follow until it ends */
			json_object_set_new(o->req, "timeout_ms", json_integer(24LL * 3600 * 1000));
	}
	json_t *reply = call(json_incref(o->req), follow && !o->json);
	if (!reply)
		return HUTCH_EXIT_SANDBOX;
	int rc = 0;
	json_t *res = json_object_get(reply, "result");
	if (refused(reply))
		rc = 1;
	else if (o->json || (!follow && strcmp(action, "poll") != 0 && strcmp(action, "wait") != 0))
		print_json(reply);
	else if (!follow) { /* poll, wait: the output so far, and the status */
		fputs(json_string_value(json_object_get(reply, "stdout")) ?: "", stdout);
		fputs(json_string_value(json_object_get(reply, "stderr")) ?: "", stderr);
	}
	if (rc == 0 && json_is_object(res) && (follow || strcmp(action, "wait") == 0))
		rc = result_code(res);
	else if (rc == 0 && json_is_true(json_object_get(reply, "running")) &&
		 strcmp(action, "wait") == 0)
		rc = HUTCH_EXIT_TIMEOUT; /* still running after --timeout */
	json_decref(reply);
	return rc;
}

/* new: --timeout is the calls' default deadline, a limit of the session */
static int build_new(struct opts *o)
{
	json_object_set_new(o->req, "op", json_string("session.new"));
	if (!json_object_get(o->req, "language"))
		return fail("%s", "new needs --lang python|node|bash");
	if (json_object_get(o->req, "timeout_ms")) {
		json_t *lim = json_object_get(o->req, "limits");
		if (!lim)
			json_object_set_new(o->req, "limits", lim = json_object());
		json_object_set(lim, "wall_ms", json_object_get(o->req, "timeout_ms"));
		json_object_del(o->req, "timeout_ms");
	}
	return 0;
}

/* The op of a subcommand that names a session, a snapshot or nothing. */
static int build_op(const char *sub, struct opts *o, int argc, char **argv)
{
	static const char *const simple[] = {"pause", "resume", "reset",    "info", "kill",
					     "exec",  "sh",	"commands", NULL};
	const char *id = argc > 0 ? argv[0] : NULL;
	bool known = false;
	char op[32];

	if (strcmp(sub, "new") == 0)
		return build_new(o);
	if (strcmp(sub, "list") == 0 || strcmp(sub, "snapshots") == 0) {
		json_object_set_new(o->req, "op",
				    json_string(sub[0] == 'l' ? "session.list" : "snapshot.list"));
		return 0;
	}
	if (strcmp(sub, "restore") == 0 || strcmp(sub, "snapshot-rm") == 0) {
		if (!id)
			return fail("%s needs a snapshot name", sub);
		json_object_set_new(
			o->req, "op",
			json_string(sub[0] == 'r' ? "snapshot.restore" : "snapshot.delete"));
		json_object_set_new(o->req, "name", json_string(id));
		return 0;
	}
	if (strcmp(sub, "net") == 0) { /* a new policy for a live session */
		if (argc != 2)
			return fail("%s", "net needs ID and a policy (none, allow:...)");
		json_object_set_new(o->req, "op", json_string("session.net"));
		json_object_set_new(o->req, "id", json_string(id));
		json_object_set_new(o->req, "network", json_string(argv[1]));
		return 0;
	}
	if (strcmp(sub, "snapshot") == 0) {
		if (argc != 2)
			return fail("%s", "snapshot needs ID and NAME");
		json_object_set_new(o->req, "op", json_string("session.snapshot"));
		json_object_set_new(o->req, "id", json_string(id));
		json_object_set_new(o->req, "name", json_string(argv[1]));
		return 0;
	}
	for (size_t i = 0; simple[i]; i++)
		known = known || strcmp(sub, simple[i]) == 0;
	if (!known)
		return fail("unknown subcommand '%s' (see hutch session --help)", sub);
	if (!id)
		return fail("%s needs a session ID", sub);
	snprintf(op, sizeof(op), "session.%s", sub);
	json_object_set_new(o->req, "op", json_string(op));
	json_object_set_new(o->req, "id", json_string(id));
	return 0;
}

/* exec and sh: the code (or - for stdin) after the ID */
static int add_code(const char *sub, struct opts *o, int argc, char **argv)
{
	char *code = NULL;
	size_t len = 0;
	struct hutch_err err;

	if (argc < 2)
		return fail("%s needs code (or - to read it from stdin)", sub);
	if (strcmp(argv[1], "-") == 0) {
		if (hutch_cli_read_file("-", 64u << 20, &code, &len, NULL, &err) < 0)
			return fail("%s", err.msg);
	} else {
		code = strdup(argv[1]);
	}
	json_object_set_new(o->req, sub[0] == 'e' ? "code" : "command", json_string(code));
	free(code);
	return 0;
}

static const char *reply_id(json_t *reply, const char *object, const char *field)
{
	return json_string_value(json_object_get(json_object_get(reply, object), field)) ?: "";
}

/* Print a reply for people (or whole with --json); the exit code. */
static int print_reply(const char *sub, struct opts *o, json_t *reply, bool is_call)
{
	if (o->json && json_object_get(reply, "error") && !json_object_get(reply, "status"))
		return print_json(reply), 1; /* scripts get the refusal as JSON too */
	if (refused(reply))
		return 1;
	if (o->json) {
		print_json(reply);
		return is_call && json_object_get(reply, "status") ? result_code(reply) : 0;
	}
	if (json_is_object(json_object_get(reply, "command"))) /* sh --background */
		return printf("%s\n", reply_id(reply, "command", "command_id")), 0;
	if (is_call)
		return print_result(reply);
	if (strcmp(sub, "new") == 0 || strcmp(sub, "restore") == 0)
		return printf("%s\n", reply_id(reply, "session", "id")), 0;
	print_json(reply);
	return 0;
}

static int run_sub(const char *sub, struct opts *o, int argc, char **argv)
{
	const char *id = argc > 0 ? argv[0] : NULL;
	bool is_call = strcmp(sub, "exec") == 0 || strcmp(sub, "sh") == 0;
	int rc;

	if (strcmp(sub, "files") == 0)
		return id ? files_cmd(o, id, argc - 1, argv + 1) : fail("%s", "files needs an ID");
	if (strcmp(sub, "cmd") == 0)
		return cmd_cmd(o, argc, argv);
	if (strcmp(sub, "upload") == 0 || strcmp(sub, "download") == 0) {
		if (argc != 3)
			return fail("%s needs ID, then the source and the destination", sub);
		return sub[0] == 'u' ? upload_cmd(o, id, argv[1], argv[2])
				     : download_cmd(o, id, argv[1], argv[2]);
	}
	rc = build_op(sub, o, argc, argv);
	if (rc == 0 && is_call)
		rc = add_code(sub, o, argc, argv);
	if (rc)
		return rc;
	if (strcmp(sub, "new") != 0 && json_object_get(o->req, "limits"))
		return fail("%s", "limits are set by `session new`");
	json_t *reply = call(json_incref(o->req), is_call && !o->json);
	if (!reply)
		return HUTCH_EXIT_SANDBOX;
	rc = print_reply(sub, o, reply, is_call);
	json_decref(reply);
	return rc;
}

int hutch_cmd_session(int argc, char **argv)
{
	struct opts o = {0};
	int rc;

	if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
		fputs(usage, argc < 2 ? stderr : stdout);
		return argc < 2 ? HUTCH_EXIT_SANDBOX : 0;
	}
	o.req = json_object();
	json_t *limits = json_object();
	json_object_set_new(o.req, "limits", limits);
	rc = parse_opts(argc - 1, argv + 1, &o, limits);
	if (rc == 0 && json_object_size(limits) == 0)
		json_object_del(o.req, "limits");
	if (rc == 0) {
		int first = optind; /* argv + 1 based: argv[first + 1] */
		rc = run_sub(argv[1], &o, argc - 1 - first, argv + 1 + first);
	}
	json_decref(o.req);
	return rc;
}
