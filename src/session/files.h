/* The host side of a session's files API: read, write, list, move and
 * archive files in a workspace directory that untrusted code writes to too.
 *
 * Threat: code in the sandbox owns the workspace's contents. It can plant
 * symlinks (to "/etc", "../../..", "/proc/self/root"), hard links, fifos,
 * sockets and deep trees, and it can swap a directory for a symlink while
 * we work. The daemon (often root) must never read or write outside the
 * workspace because of anything it finds there.
 *
 * How:
 * - Every path is resolved by openat2(2) relative to `root`, an fd (O_PATH
 *   is enough) of the workspace directory, with RESOLVE_IN_ROOT |
 *   RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV: ".." and absolute symlinks are
 *   clamped to the root, as they are inside the sandbox where the same
 *   directory is /workspace. Symlinks in intermediate components are
 *   followed that way; the last component is never followed (O_NOFOLLOW,
 *   or *at() calls with AT_SYMLINK_NOFOLLOW on an fd of its parent).
 * - Without openat2 (Linux < 5.6, or a seccomp filter) every call fails
 *   with ENOSYS: there is no unsafe fallback.
 * - Tree walks (remove, usage, tar) hold directory fds, open children with
 *   O_NOFOLLOW | O_DIRECTORY, never follow symlinks, never cross into
 *   another filesystem, and climb back with ".." only after checking it is
 *   the directory they came from. So they use a bounded number of fds
 *   whatever the depth (up to HUTCH_FILES_MAX_DEPTH levels).
 * - Reads open with O_NONBLOCK and refuse anything but regular files, so a
 *   fifo or a device never blocks the daemon.
 *
 * Paths: relative ("a/b.txt", under the root) or absolute under /workspace
 * ("/workspace/a/b.txt"). Empty and "." components are dropped; ".."
 * components, other absolute paths ("/etc/passwd") and "" are EINVAL; a
 * component longer than NAME_MAX or a path of PATH_MAX bytes or more is
 * ENAMETOOLONG. "." and "/workspace" name the root itself: fine for list,
 * stat, mkdir and tar, EINVAL for write, remove and move.
 *
 * Errors (docs/errors.md): functions return 0 (or a pointer) on success,
 * and -1 (or NULL) with `err` filled on failure; `err` may be NULL.
 * Codes worth knowing: EINVAL (bad path, not a regular file, bad archive
 * entry), ENOENT, EISDIR, ENOTDIR, EEXIST, EFBIG (over max_bytes), ELOOP
 * (the last component is a symlink, or a symlink loop), ENOSYS (no
 * openat2). The functions keep no state and are thread-safe; none is
 * async-signal-safe.
 */
#ifndef HUTCH_SESSION_FILES_H
#define HUTCH_SESSION_FILES_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hutch.h"
#include "util/buf.h"

/* Deepest tree the walks (remove, usage, tar) descend; deeper is ELOOP. It
 * bounds memory (each level keeps its sorted names), not fds. */
#define HUTCH_FILES_MAX_DEPTH 4096

/* Who owns what the API creates: files and directories get uid:gid (-1
 * keeps one unchanged). chown is skipped when not running as root and uid
 * and gid are already ours (rootless: the sandbox's uid maps to ours);
 * otherwise a failed chown fails the call. mode: permission bits of files
 * written by hutch_files_write*(), 0 meaning 0644, always masked with
 * 0777 (never setuid). Directories are made 0755. */
struct hutch_files_owner {
	uid_t uid;
	gid_t gid;
	mode_t mode;
};

/* Write len bytes of data (NULL is fine when len is 0) to path,
 * atomically: a hidden temp file in the target's directory is filled,
 * fsync'ed, chown'ed and chmod'ed, then renamed over the target. On any
 * failure nothing is left behind and the target is unchanged. Missing
 * parents are created (mkdir -p, each new directory owned by own). own may
 * be NULL (no chown, mode 0644). A target that is a symlink is replaced by
 * the file, never followed. Errors: EFBIG when len > max_bytes (nothing
 * touched), EISDIR when path is a directory, ENOTDIR when a parent is not
 * one. */
int hutch_files_write(int root, const char *path, const void *data, size_t len,
		      const struct hutch_files_owner *own, uint64_t max_bytes,
		      struct hutch_err *err);

/* As hutch_files_write, copying from the host fd `in_fd` until EOF (for
 * uploads). in_fd is borrowed, read from its current offset, and must be
 * blocking (EAGAIN is an error). EFBIG as soon as more than max_bytes were
 * read: the copy stops there and the temp file is removed. */
int hutch_files_write_fd(int root, const char *path, int in_fd, const struct hutch_files_owner *own,
			 uint64_t max_bytes, struct hutch_err *err);

/* Append to `out` (which the caller initialised) `length` bytes of the
 * regular file at path from `offset` (length 0: to the end). A range past
 * the end is cut short; an offset past the end gives no bytes. EFBIG when
 * the range to read is over max_bytes; EINVAL when path is not a regular
 * file (fifo, socket, device), EISDIR for a directory, ELOOP when it is a
 * symlink (never followed). On failure `out` is as it was. */
int hutch_files_read(int root, const char *path, uint64_t offset, uint64_t length,
		     uint64_t max_bytes, struct hutch_buf *out, struct hutch_err *err);

/* The entries of directory `path`, sorted by name (bytewise), as a new
 * JSON array the caller json_decref()s; NULL on error (ENOTDIR when path is
 * not a directory or is a symlink, which is not followed). Each entry:
 *	{"name": "a.txt", "type": "file", "size": 12, "mode": "0644",
 *	 "mtime": 1700000000}
 * type is one of file dir symlink fifo socket char block other; mode the
 * permission bits in octal (with setuid/setgid/sticky); mtime an integer,
 * whole seconds since the epoch; symlinks add "target". Names and targets
 * that are not UTF-8 are given with U+FFFD for each bad byte. Entries
 * removed while listing are left out. */
json_t *hutch_files_list(int root, const char *path, struct hutch_err *err);

/* One entry as in hutch_files_list, with lstat semantics (a symlink is
 * described, not followed). name is the path as given, normalised:
 * "a/b" or "/workspace/a/b", and "." or "/workspace" for the root. */
json_t *hutch_files_stat(int root, const char *path, struct hutch_err *err);

/* mkdir -p: create path and its missing parents, each owned by own (may be
 * NULL), mode 0755. An existing directory is fine (also a symlink to one
 * inside the root); an existing non-directory is EEXIST. */
int hutch_files_mkdir(int root, const char *path, const struct hutch_files_owner *own,
		      struct hutch_err *err);

/* Remove a file or a symlink (never its target), or an empty directory;
 * with `recursive` a whole tree, never following symlinks, never leaving
 * it. ENOENT when missing, ENOTEMPTY for a non-empty directory without
 * `recursive`, EINVAL for the root. When the tree changes under a
 * recursive removal (a directory moved away), EAGAIN: part of it may be
 * gone, nothing outside it is touched. */
int hutch_files_remove(int root, const char *path, bool recursive, struct hutch_err *err);

/* Rename `from` to `to` inside the root (rename(2) of the last components;
 * missing parents of `to` are ENOENT). Without `overwrite` an existing
 * `to` is EEXIST (RENAME_NOREPLACE); with it, a file or an empty directory
 * is replaced as rename(2) does. */
int hutch_files_move(int root, const char *from, const char *to, bool overwrite,
		     struct hutch_err *err);

/* Disk used by the whole tree, for quotas: *bytes is the sum of st_blocks
 * * 512 and *inodes the number of entries, the root included; hard links
 * are counted once; symlinks are not followed. */
int hutch_files_usage(int root, uint64_t *bytes, uint64_t *inodes, struct hutch_err *err);

/* Write to out_fd (borrowed) a pax tar of the file or tree at path. For a
 * directory, the archive holds its contents with names relative to it
 * ("a.txt", "sub", "sub/b.txt"), sorted, without an entry for the
 * directory itself; for anything else, one entry named by its last
 * component. Symlinks are stored as symlinks; fifos, sockets and devices
 * are left out; hard links are stored as separate files. Names are stored
 * as raw bytes (pax hdrcharset=BINARY). */
int hutch_files_tar_out(int root, const char *path, int out_fd, struct hutch_err *err);

/* Extract a tar (plain or gzip) read from in_fd (borrowed) under the
 * directory path, created when missing. Each entry name is checked
 * (absolute names and ".." are EINVAL; "./" is dropped) and created through
 * this API's own in-root resolution, never libarchive's disk writer:
 * regular files (written atomically, not fsync'ed), directories and
 * symlinks (stored as they are; they resolve in-root when later followed,
 * so "s -> /etc" then "s/x" cannot leave the root). Hard links are EINVAL;
 * fifos, sockets and devices are skipped. Modes are masked with 0777 &
 * ~022 (directories also get u+rwx); ownership comes from own (may be
 * NULL). Extraction stops at the first error: earlier entries stay. EFBIG
 * when the files' bytes would pass max_bytes in total. */
int hutch_files_tar_in(int root, const char *path, int in_fd, const struct hutch_files_owner *own,
		       uint64_t max_bytes, struct hutch_err *err);

#endif
