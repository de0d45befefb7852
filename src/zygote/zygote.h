/* hutch-zygote: the warm interpreter of the fast path (see src/cell/zygote.h
 * for the process shape). Only this program links libpython. */
#ifndef HUTCH_ZYGOTE_ZYGOTE_H
#define HUTCH_ZYGOTE_ZYGOTE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "util/err.h"

int hutch_zygote_python_init(const char *preload, char *msg, size_t msg_size);
void hutch_zygote_python_before_fork(void);
void hutch_zygote_python_after_fork(int in_child);
/* In a fresh child, before it waits: pre-fault what a run will touch. */
void hutch_zygote_python_warm(void);
/* Run the file at path as __main__ with args and a new environment; returns
 * the exit code `python3 path args...` would have. */
int hutch_zygote_python_run(const char *path, char *const *args, char *const *envp);

/* A node started ahead in a node cell (node.c). */
struct hutch_node_warm {
	pid_t pid;
	int pidfd;
	int ctl;	  /* node's fd 0 at start: the request goes here */
	int out_r, out_w; /* node's stdout: read end for the pool */
	int err_r, err_w; /* node's stderr: likewise */
};

/* In C, locked down: start node and wait until it is ready for a request. */
int hutch_node_warm_start(struct hutch_node_warm *w, struct hutch_err *err);
/* Whether the started node can run this program (argv, envp as the cold
 * path would execve them, stdin as the pool handed it) exactly as a fresh
 * node would; when not, stop it and execve as usual. */
bool hutch_node_warm_fits(char *const *argv, char *const *envp, int stdin_fd);
/* Hand it argv[2...], envp and the working directory; it runs at once. */
int hutch_node_warm_send(struct hutch_node_warm *w, char *const *argv, char *const *envp,
			 const char *cwd, struct hutch_err *err);
/* Wait for node and end C the way node ended. */
_Noreturn void hutch_node_warm_wait_exit(struct hutch_node_warm *w);
/* Kill it; out_w and err_w stay open for what runs instead. */
void hutch_node_warm_stop(struct hutch_node_warm *w);

#endif
