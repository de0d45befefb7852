#ifndef HUTCH_CLI_CLI_H
#define HUTCH_CLI_CLI_H

/* Exit codes of the CLI (documented in README.md). */
#define HUTCH_EXIT_TIMEOUT 124
#define HUTCH_EXIT_SANDBOX 125 /* hutch itself failed: bad usage or sandbox set-up */

int hutch_cmd_run(int argc, char **argv);
int hutch_cmd_daemon(int argc, char **argv);
int hutch_cmd_session(int argc, char **argv);
int hutch_cmd_mcp(int argc, char **argv);
int hutch_cmd_serve(int argc, char **argv);
int hutch_cmd_keys(int argc, char **argv);

/* The daemon's options and main loop; http adds the HTTP listener (serve). */
struct hutch_http_opts;
int hutch_cli_daemon(int argc, char **argv, const struct hutch_http_opts *http);
int hutch_cmd_agent(int argc, char **argv);

/* Read a whole file ("-" for stdin) into memory, at most max bytes. Regular
 * files, pipes and terminals only. Returns -1 with err filled. */
struct hutch_err;
int hutch_cli_read_file(const char *path, size_t max, char **data, size_t *len, unsigned int *mode,
			struct hutch_err *err);

#endif
