#ifndef HUTCH_CLI_CLI_H
#define HUTCH_CLI_CLI_H

#include <stddef.h>

/* Exit codes of the CLI (documented in README.md). */
#define HUTCH_EXIT_TIMEOUT 124
#define HUTCH_EXIT_SANDBOX 125 /* hutch itself failed: bad usage or sandbox set-up */

/*
 * hutch is two programs (Makefile). `hutch` links only libseccomp and
 * jansson, so it starts in ~2 ms instead of ~16 (dynamic loading of libcurl,
 * libarchive, libmicrohttpd and theirs is dear on a VM): it runs `run` and
 * `session` itself. For everything else it execs `hutch-full` (beside it, or
 * in HUTCH_LIBEXECDIR) with the same command line (cli/lean.c); hutch-full
 * is main.c with every command (cli/tar.c for directory transfers).
 */
extern char **hutch_cli_argv; /* main's argv, for that exec */

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

/* Directories as tar (libarchive), for session upload and download. In
 * hutch, each of these execs hutch-full, which then does the whole command:
 * call hutch_cli_tar_ensure before the command's first request. */
struct hutch_buf;
struct hutch_err;
void hutch_cli_tar_ensure(void);
int hutch_cli_tar_pack(int root, struct hutch_buf *out, struct hutch_err *err);
int hutch_cli_tar_unpack(int root, int fd, struct hutch_err *err);

/* Read a whole file ("-" for stdin) into memory, at most max bytes. Regular
 * files, pipes and terminals only. Returns -1 with err filled. */
int hutch_cli_read_file(const char *path, size_t max, char **data, size_t *len, unsigned int *mode,
			struct hutch_err *err);

#endif
