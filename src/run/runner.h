/* Pieces shared by the cold and fast paths: how a request becomes argv,
 * environment and files. */
#ifndef HUTCH_RUN_RUNNER_H
#define HUTCH_RUN_RUNNER_H

#include "hutch.h"

/* Caller frees with hutch_runner_free_strv. */
char **hutch_runner_build_env(const struct hutch_exec_request *req);
char **hutch_runner_build_argv(const struct hutch_exec_request *req);
/* Array of files with absolute sandbox paths (owned) and borrowed data. */
struct hutch_file *hutch_runner_build_files(const struct hutch_exec_request *req, size_t *count);
void hutch_runner_free_strv(char **v);
/* env plus the variables that send proxy-aware clients to the egress proxy
 * (HTTP_PROXY and friends, both cases; NO_PROXY for loopback). Takes env. */
char **hutch_proxy_env(char **env);

#endif
