#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "hutch.h"
#include "util/log.h"

static const char usage[] = "usage: hutch <command> [options]\n"
			    "\n"
			    "Run untrusted code in a fresh, isolated Linux sandbox.\n"
			    "\n"
			    "commands:\n"
			    "  run        run one command or snippet in a new sandbox\n"
			    "  session    stateful sandboxes: new, exec, sh, files, pause, ...\n"
			    "  daemon     keep warm pools and sessions behind a unix socket\n"
			    "  serve      the daemon plus the HTTP API\n"
			    "  keys       API keys of the HTTP API: add, list, revoke\n"
			    "  mcp        the MCP server for agents (stdio)\n"
			    "  agent      a task in English -> planned, coded, run, verified\n"
			    "\n"
			    "options:\n"
			    "  -h, --help     show this help (also: hutch run --help)\n"
			    "  -V, --version  show the version\n"
			    "\n"
			    "environment:\n"
			    "  HUTCH_LOG_FORMAT=json  log as JSON lines on stderr (egress events\n"
			    "                         carry execution_id, session_id, labels)\n";

char **hutch_cli_argv;

int main(int argc, char **argv)
{
	const char *log_format = getenv("HUTCH_LOG_FORMAT");

	hutch_cli_argv = argv;
	if (log_format && strcmp(log_format, "json") == 0)
		hutch_log_set_json(1);
	if (argc < 2) {
		fputs(usage, stderr);
		return HUTCH_EXIT_SANDBOX;
	}
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		fputs(usage, stdout);
		return 0;
	}
	if (strcmp(argv[1], "-V") == 0 || strcmp(argv[1], "--version") == 0 ||
	    strcmp(argv[1], "version") == 0) {
		printf("hutch %s\n", HUTCH_VERSION);
		return 0;
	}
	if (strcmp(argv[1], "run") == 0)
		return hutch_cmd_run(argc - 1, argv + 1);
	if (strcmp(argv[1], "daemon") == 0)
		return hutch_cmd_daemon(argc - 1, argv + 1);
	if (strcmp(argv[1], "serve") == 0)
		return hutch_cmd_serve(argc - 1, argv + 1);
	if (strcmp(argv[1], "keys") == 0)
		return hutch_cmd_keys(argc - 1, argv + 1);
	if (strcmp(argv[1], "session") == 0)
		return hutch_cmd_session(argc - 1, argv + 1);
	if (strcmp(argv[1], "mcp") == 0)
		return hutch_cmd_mcp(argc - 1, argv + 1);
	if (strcmp(argv[1], "agent") == 0)
		return hutch_cmd_agent(argc - 1, argv + 1);
	fprintf(stderr, "hutch: unknown command '%s'\n%s", argv[1], usage);
	return HUTCH_EXIT_SANDBOX;
}
