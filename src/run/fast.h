/* The fast path: run a request in a warm cell from a pool. */
#ifndef HUTCH_RUN_FAST_H
#define HUTCH_RUN_FAST_H

#include "hutch.h"
#include "run/pool.h"

/* As hutch_run, on a cell from `pool`. The result's path is "fast". */
int hutch_run_fast(struct hutch_pool *pool, const struct hutch_exec_request *req,
		   const struct hutch_run_hooks *hooks, struct hutch_exec_result *res,
		   struct hutch_err *err);

#endif
