/* Mount and file helpers shared by mount.c and layer.c (child-only code:
 * no malloc, async-signal-safe system calls, errors into err). */
#ifndef HUTCH_CELL_MOUNTUTIL_H
#define HUTCH_CELL_MOUNTUTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/mount.h>
#include <sys/types.h>

#include "hutch.h"

#define PATHBUF 512
#define RO_ATTR (MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)

/* out = a "/" b, at most PATHBUF bytes; ENAMETOOLONG otherwise. */
int hutch_path_join(char *out, const char *a, const char *b, struct hutch_err *err);
/* Bind src on dst with MOUNT_ATTR_* attr (recursively: on every submount). */
int hutch_bind(const char *src, const char *dst, uint64_t attr, bool recursive,
	       struct hutch_err *err);
/* Create a new file (O_EXCL, O_NOFOLLOW) holding text (may be NULL). */
int hutch_make_file(const char *path, const char *text, mode_t mode, struct hutch_err *err);
/* mkdir that accepts an existing directory. */
int hutch_make_dir(const char *path, mode_t mode, struct hutch_err *err);
/* A directory or an empty file at dst, matching what src is. */
int hutch_make_mount_point(const char *src, const char *dst, struct hutch_err *err);

#endif
