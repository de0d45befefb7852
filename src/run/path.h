/* Sandbox paths given by users: pure checks, no I/O (fuzzed). */
#ifndef HUTCH_RUN_PATH_H
#define HUTCH_RUN_PATH_H

#include <stddef.h>

#include "hutch.h"

/* Normalise a path for a file placed in the sandbox or a working directory:
 * "rel/x" or "/workspace/rel/x" become "/workspace/rel/x" in out. Rejects
 * (EINVAL) empty paths, NUL bytes, "." and ".." components, empty components,
 * absolute paths outside /workspace, and names too long (ENAMETOOLONG).
 * allow_root: whether "/workspace" itself is acceptable (a workdir). */
int hutch_sandbox_path(const char *path, char *out, size_t out_size, int allow_root,
		       struct hutch_err *err);

#endif
