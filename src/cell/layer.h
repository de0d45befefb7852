/* The per-execution layer: fresh /proc, fresh writable tmpfs, placed files.
 * Child-only code (after clone or fork into new namespaces). */
#ifndef HUTCH_CELL_LAYER_H
#define HUTCH_CELL_LAYER_H

#include <stddef.h>
#include <stdint.h>

#include "hutch.h"

/* Mount a new procfs at proc_dir (an existing directory) for the calling
 * process's pid namespace, with /proc/sys & co read-only, kcore & co masked. */
int hutch_layer_proc(const char *proc_dir, struct hutch_err *err);

/* Mount one tmpfs of disk_bytes at staging (created) and bind its parts on
 * root/workspace, root/tmp and root/dev/shm. The caller detaches staging
 * once it no longer needs it. */
int hutch_layer_writable(const char *root, const char *staging, uint64_t disk_bytes,
			 struct hutch_err *err);

/* Change the size of the writable tmpfs seen at workspace. */
int hutch_layer_resize(const char *workspace, uint64_t disk_bytes, struct hutch_err *err);

/* Place files (validated absolute sandbox paths) under the directory that is
 * /workspace, owned by the sandbox user, and create workdir. */
int hutch_layer_place(const char *workspace, const struct hutch_file *files, size_t nfiles,
		      const char *workdir, struct hutch_err *err);

#endif
