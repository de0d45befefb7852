/* The commands hutch leaves to hutch-full (see cli.h): each execs it with
 * hutch's own command line, which it then runs from the start. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

#ifndef HUTCH_LIBEXECDIR /* the Makefile sets it from PREFIX */
#define HUTCH_LIBEXECDIR "/usr/local/libexec/hutch"
#endif

/* hutch-full beside this program (the build tree, or a package that puts
 * both in one place), else in HUTCH_LIBEXECDIR (make install). */
static void find_full(char *out, size_t size)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n > 0) {
		self[n] = '\0';
		char *slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			snprintf(out, size, "%s/hutch-full", self);
			if (access(out, X_OK) == 0)
				return;
		}
	}
	snprintf(out, size, "%s/hutch-full", HUTCH_LIBEXECDIR);
}

static int exec_full(void)
{
	char path[PATH_MAX + 16];

	find_full(path, sizeof(path));
	fflush(NULL);
	execv(path, hutch_cli_argv);
	fprintf(stderr,
		"hutch: cannot run %s (%s), which does the '%s' command: is hutch installed "
		"whole?\n",
		path, strerror(errno), hutch_cli_argv[1]);
	return HUTCH_EXIT_SANDBOX;
}

/* One body for every command hutch-full does (cli.h declares them): main
 * calls each by its own name, each is this. */
static int delegate(int argc, char **argv)
{
	(void)argc, (void)argv;
	return exec_full();
}

int hutch_cmd_daemon(int argc, char **argv) __attribute__((alias("delegate")));
int hutch_cmd_serve(int argc, char **argv) __attribute__((alias("delegate")));
int hutch_cmd_keys(int argc, char **argv) __attribute__((alias("delegate")));
int hutch_cmd_mcp(int argc, char **argv) __attribute__((alias("delegate")));
int hutch_cmd_agent(int argc, char **argv) __attribute__((alias("delegate")));

void hutch_cli_tar_ensure(void)
{
	exit(exec_full());
}

int hutch_cli_tar_pack(int root, struct hutch_buf *out, struct hutch_err *err)
{
	(void)root, (void)out, (void)err;
	exit(exec_full());
}

int hutch_cli_tar_unpack(int root, int fd, struct hutch_err *err)
{
	(void)root, (void)fd, (void)err;
	exit(exec_full());
}
