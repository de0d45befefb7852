/* Pieces shared by files.c, files_walk.c and files_tar.c: path checks,
 * in-root resolution, atomic writes and the tree walker. Not an API. */
#ifndef HUTCH_SESSION_FILES_INTERNAL_H
#define HUTCH_SESSION_FILES_INTERNAL_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "session/files.h"

/* Turn a user path into a clean relative one in out: "a/b", or "" for the
 * root (see files.h for the rules). user: absolute paths under /workspace
 * are accepted; otherwise (archive entries) every absolute path is EINVAL. */
int hutch_files_norm(const char *path, bool user, char *out, size_t size, struct hutch_err *err);

/* openat2(root, rel) with in-root resolution; rel "" is the root. Tier 1:
 * -1 and errno. O_CLOEXEC is added. */
int hutch_files_openat2(int root, const char *rel, int flags, mode_t mode);

/* Fill err after a failed hutch_files_openat2() of `path`; returns -1. */
int hutch_files_open_failed(struct hutch_err *err, const char *path);

/* An O_PATH fd of the parent directory of rel (not ""), *last pointing to
 * rel's last component. With create, missing parents are made (mkdir -p,
 * owned by own); without, they are ENOENT. */
int hutch_files_parent(int root, const char *rel, bool create, const struct hutch_files_owner *own,
		       const char **last, struct hutch_err *err);

/* mkdir -p of rel; returns an fd of the directory. notdir_code: the errno
 * when rel itself exists but is not a directory. */
int hutch_files_make_dirs(int root, const char *rel, const struct hutch_files_owner *own,
			  int notdir_code, struct hutch_err *err);

/* fchownat(dirfd, name, own, flags) unless own is NULL or already ours. */
int hutch_files_chown(int dirfd, const char *name, int flags, const struct hutch_files_owner *own,
		      const char *what, struct hutch_err *err);

/* Where the bytes of an atomic write come from. next() gives the next
 * chunk in *chunk and returns its length, 0 at the end, -1 on error. */
struct hutch_files_source {
	ssize_t (*next)(struct hutch_files_source *src, const void **chunk, struct hutch_err *err);
};

struct hutch_files_wopts {
	const struct hutch_files_owner *own; /* may be NULL */
	mode_t mode;			     /* permission bits of the file */
	uint64_t max_bytes;
	bool sync;	   /* fsync before the rename */
	uint64_t *written; /* if not NULL: bytes written, on success */
};

/* Write what src gives to rel (user spelling `path`, for messages) through
 * a temp file renamed over it; see hutch_files_write. */
int hutch_files_write_atomic(int root, const char *path, const char *rel,
			     struct hutch_files_source *src, const struct hutch_files_wopts *o,
			     struct hutch_err *err);

/* Create (or replace) rel as a symlink to target, atomically. */
int hutch_files_symlink(int root, const char *rel, const char *target,
			const struct hutch_files_owner *own, struct hutch_err *err);

/* The names in directory dirfd (any fd of it, O_PATH too), without "." and
 * "..", sorted bytewise. Free with hutch_files_free_names(). */
int hutch_files_read_names(int dirfd, char ***names, size_t *count, struct hutch_err *err);
void hutch_files_free_names(char **names, size_t count);

/* A depth-first walk of the tree under a directory, which is not itself
 * visited. dirfd: the directory (borrowed); path: the entry's path
 * relative to the top ("sub/x"). */
struct hutch_files_walk_ops {
	/* Each entry, with its lstat. Return 1 to walk into it (directories on
	 * the same filesystem only; ignored otherwise), 0 to go on, -1 to stop
	 * with err filled. */
	int (*enter)(void *ctx, int dirfd, const char *name, const char *path,
		     const struct stat *st, struct hutch_err *err);
	/* After the contents of a directory entered with 1. May be NULL. */
	int (*leave)(void *ctx, int dirfd, const char *name, const char *path,
		     struct hutch_err *err);
};

int hutch_files_walk(int dirfd, const struct hutch_files_walk_ops *ops, void *ctx,
		     struct hutch_err *err);

#endif
