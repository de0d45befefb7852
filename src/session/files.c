/* The files API (files.h): path rules, in-root resolution, atomic writes,
 * reads, mkdir and move. Tree walks are in files_tree.c, tar in
 * files_tar.c. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "session/files.h"
#include "session/files_internal.h"
#include "util/cleanup.h"
#include "util/err.h"
#include "util/mem.h"

#define TEMP_PREFIX ".hutch-tmp-"
#define CHUNK	    ((size_t)64 * 1024)

/* --- paths --- */

static bool is_dotdot(const char *c, size_t n)
{
	return n == 2 && c[0] == '.' && c[1] == '.';
}

/* Skip the "/workspace" of an absolute user path; NULL when it is not
 * under /workspace ("/etc/passwd", "/workspacex"). */
static const char *strip_workspace(const char *path)
{
	size_t n = strlen(HUTCH_WORKSPACE);

	if (strncmp(path, HUTCH_WORKSPACE, n) != 0 || (path[n] != '/' && path[n] != '\0'))
		return NULL;
	return path + n;
}

int hutch_files_norm(const char *path, bool user, char *out, size_t size, struct hutch_err *err)
{
	const char *p = path;
	size_t len = 0;

	out[0] = '\0';
	if (!path || !*path)
		return hutch_err_setx(err, EINVAL, "empty path");
	if (strlen(path) >= PATH_MAX)
		return hutch_err_setx(err, ENAMETOOLONG, "path longer than %d bytes", PATH_MAX - 1);
	if (*p == '/') {
		p = user ? strip_workspace(path) : NULL;
		if (!p)
			return hutch_err_setx(err, EINVAL,
					      user ? "path '%s' is outside " HUTCH_WORKSPACE
						   : "path '%s' is absolute",
					      path);
	}
	while (*p) {
		size_t n = strcspn(p, "/");
		/* ".." is refused, not resolved: it never means anything a user
		 * needs here, and refusing it keeps every check simple */
		if (is_dotdot(p, n))
			return hutch_err_setx(err, EINVAL, "path '%s' may not contain '..'", path);
		if (n > NAME_MAX)
			return hutch_err_setx(err, ENAMETOOLONG, "a component of '%s' is too long",
					      path);
		if (n > 0 && !(n == 1 && *p == '.')) {
			if (len + n + 2 > size)
				return hutch_err_setx(err, ENAMETOOLONG, "path '%s' is too long",
						      path);
			if (len)
				out[len++] = '/';
			memcpy(out + len, p, n);
			len += n;
			out[len] = '\0';
		}
		p += n;
		if (*p == '/')
			p++;
	}
	return 0;
}

/* --- resolution --- */

#ifdef SYS_openat2
static long sys_openat2(int dirfd, const char *path, struct open_how *how)
{
	return syscall(SYS_openat2, dirfd, path, how, sizeof(*how));
}
#else
static long sys_openat2(int dirfd, const char *path, struct open_how *how)
{
	(void)dirfd;
	(void)path;
	(void)how;
	errno = ENOSYS;
	return -1;
}
#endif

int hutch_files_openat2(int root, const char *rel, int flags, mode_t mode)
{
	/* RESOLVE_IN_ROOT: "..", absolute symlinks and "/" stay in root, as
	 * in the sandbox. NO_MAGICLINKS: no /proc/<pid>/fd-style jumps.
	 * NO_XDEV: no mount crossing (a mount could cover anything).
	 * openat2(2), Linux 5.6. */
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC),
		.mode = mode,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
	};
	long fd = -1;

	/* EAGAIN: a concurrent rename somewhere in the tree; the kernel asks
	 * for a retry rather than risk a wrong answer */
	for (int i = 0; i < 32; i++) {
		fd = sys_openat2(root, *rel ? rel : ".", &how);
		if (fd >= 0 || (errno != EAGAIN && errno != EINTR))
			break;
	}
	return (int)fd;
}

int hutch_files_open_failed(struct hutch_err *err, const char *path)
{
	switch (errno) {
	case ENOSYS:
		return hutch_err_setx(err, ENOSYS,
				      "cannot resolve '%s': openat2(2) is not available (Linux 5.6 "
				      "or later), and there is no unsafe fallback",
				      path);
	case ELOOP:
		return hutch_err_setx(err, ELOOP,
				      "'%s' is a symbolic link (not followed) or a symlink loop",
				      path);
	case EXDEV:
		return hutch_err_setx(err, EXDEV, "'%s' crosses a mount point", path);
	default:
		return hutch_err_set(err, errno, "cannot open '%s'", path);
	}
}

/* --- ownership and directories --- */

int hutch_files_chown(int dirfd, const char *name, int flags, const struct hutch_files_owner *own,
		      const char *what, struct hutch_err *err)
{
	if (!own)
		return 0;
	/* rootless: the sandbox's uid is ours, and chown to it would be a
	 * needless EPERM risk (supplementary groups) */
	if (geteuid() != 0 && own->uid == geteuid() && own->gid == getegid())
		return 0;
	if (fchownat(dirfd, name, own->uid, own->gid, flags) < 0)
		return hutch_err_set(err, errno, "cannot chown '%s' to %d:%d", what, (int)own->uid,
				     (int)own->gid);
	return 0;
}

/* A directory we just made: fix its mode (the umask may have cut it) and
 * owner through an fd, so a swap of the name cannot redirect either. */
static int adopt_new_dir(int parent, const char *name, const char *prefix,
			 const struct hutch_files_owner *own, struct hutch_err *err)
{
	_cleanup_close_ int fd =
		openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return hutch_err_set(err, errno, "cannot open new directory '%s'", prefix);
	if (hutch_files_chown(fd, "", AT_EMPTY_PATH, own, prefix, err) < 0)
		return -1;
	if (fchmod(fd, 0755) < 0)
		return hutch_err_set(err, errno, "cannot chmod '%s'", prefix);
	return hutch_take_fd(&fd);
}

/* One step of mkdir -p: the directory `prefix` (last component `name`,
 * in the directory `parent`), made when missing. */
static int step_dir(int root, int parent, const char *prefix, const char *name,
		    const struct hutch_files_owner *own, int notdir_code, struct hutch_err *err)
{
	/* resolved from the root each time, so symlinks among the components
	 * mean what they mean in the sandbox */
	int fd = hutch_files_openat2(root, prefix, O_PATH | O_DIRECTORY, 0);

	if (fd >= 0)
		return fd;
	if (errno == ENOTDIR)
		return hutch_err_setx(err, notdir_code, "'%s' exists and is not a directory",
				      prefix);
	if (errno != ENOENT)
		return hutch_files_open_failed(err, prefix);
	if (mkdirat(parent, name, 0755) == 0)
		return adopt_new_dir(parent, name, prefix, own, err);
	if (errno != EEXIST)
		return hutch_err_set(err, errno, "cannot create directory '%s'", prefix);
	/* lost a race, or `name` is a symlink that resolves to nothing */
	fd = hutch_files_openat2(root, prefix, O_PATH | O_DIRECTORY, 0);
	if (fd < 0)
		return hutch_files_open_failed(err, prefix);
	return fd;
}

int hutch_files_make_dirs(int root, const char *rel, const struct hutch_files_owner *own,
			  int notdir_code, struct hutch_err *err)
{
	_cleanup_close_ int dir = hutch_files_openat2(root, "", O_PATH | O_DIRECTORY, 0);
	char prefix[PATH_MAX];
	size_t len = strlen(rel);

	if (dir < 0)
		return hutch_files_open_failed(err, HUTCH_WORKSPACE);
	if (len >= sizeof(prefix))
		return hutch_err_setx(err, ENAMETOOLONG, "path '%s' is too long", rel);
	for (size_t start = 0; start < len;) {
		size_t end = start + strcspn(rel + start, "/");
		memcpy(prefix, rel, end);
		prefix[end] = '\0';
		int fd = step_dir(root, dir, prefix, prefix + start, own,
				  end == len ? notdir_code : ENOTDIR, err);
		if (fd < 0)
			return -1;
		close(dir);
		dir = fd;
		start = end + 1;
	}
	return hutch_take_fd(&dir);
}

int hutch_files_parent(int root, const char *rel, bool create, const struct hutch_files_owner *own,
		       const char **last, struct hutch_err *err)
{
	const char *slash = strrchr(rel, '/');
	char dir[PATH_MAX];
	int fd;

	*last = slash ? slash + 1 : rel;
	if (!slash)
		dir[0] = '\0';
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - rel), rel);
	if (create)
		return hutch_files_make_dirs(root, dir, own, ENOTDIR, err);
	fd = hutch_files_openat2(root, dir, O_PATH | O_DIRECTORY, 0);
	if (fd < 0)
		return hutch_files_open_failed(err, *dir ? dir : HUTCH_WORKSPACE);
	return fd;
}

/* --- atomic writes --- */

/* A fresh hidden name in the target's directory. Random, so code in the
 * sandbox cannot plant something there first (and O_EXCL would catch it). */
static void temp_name(char *name, size_t size)
{
	static _Atomic uint64_t counter;
	uint64_t r;

	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r)) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		r = (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32) ^ ++counter;
	}
	snprintf(name, size, TEMP_PREFIX "%016" PRIx64, r);
}

static int create_temp(int dir, char *name, size_t size, const char *path, struct hutch_err *err)
{
	for (int i = 0; i < 16; i++) {
		temp_name(name, size);
		/* 0600 until it is complete; O_NOFOLLOW|O_EXCL never open
		 * anything planted under this name */
		int fd = openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
				0600);
		if (fd >= 0)
			return fd;
		if (errno != EEXIST)
			return hutch_err_set(err, errno, "cannot create a temp file for '%s'",
					     path);
	}
	return hutch_err_setx(err, EEXIST, "cannot find a free temp name for '%s'", path);
}

static int write_all(int fd, const void *data, size_t len)
{
	const char *p = data;

	while (len > 0) {
		ssize_t n = HUTCH_RETRY(write(fd, p, len));
		if (n < 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int too_big(struct hutch_err *err, const char *path, uint64_t max)
{
	return hutch_err_setx(err, EFBIG, "'%s' is larger than the limit of %" PRIu64 " bytes",
			      path, max);
}

static int fill_temp(int fd, struct hutch_files_source *src, const struct hutch_files_wopts *o,
		     const char *path, struct hutch_err *err)
{
	uint64_t total = 0;
	const void *chunk = NULL;
	ssize_t n;

	while ((n = src->next(src, &chunk, err)) > 0) {
		/* checked before writing, so a stream can never push more than
		 * max_bytes onto the disk */
		if ((uint64_t)n > o->max_bytes - total)
			return too_big(err, path, o->max_bytes);
		if (write_all(fd, chunk, (size_t)n) < 0)
			return hutch_err_set(err, errno, "cannot write '%s'", path);
		total += (uint64_t)n;
	}
	if (n < 0)
		return -1;
	if (o->written)
		*o->written = total;
	return 0;
}

static int finish_temp(int fd, const struct hutch_files_wopts *o, const char *path,
		       struct hutch_err *err)
{
	/* chown first: it clears setuid bits, and the mode is final after it */
	if (hutch_files_chown(fd, "", AT_EMPTY_PATH, o->own, path, err) < 0)
		return -1;
	if (fchmod(fd, o->mode & 0777) < 0)
		return hutch_err_set(err, errno, "cannot chmod '%s'", path);
	if (o->sync && fsync(fd) < 0)
		return hutch_err_set(err, errno, "cannot fsync '%s'", path);
	return 0;
}

/* The target may be anything but a directory: renaming a file over a
 * symlink replaces the link, which is what we want (never follow it). */
static int refuse_directory(int dir, const char *last, const char *path, struct hutch_err *err)
{
	struct stat st;

	if (fstatat(dir, last, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
		return hutch_err_setx(err, EISDIR, "'%s' is a directory", path);
	return 0;
}

int hutch_files_write_atomic(int root, const char *path, const char *rel,
			     struct hutch_files_source *src, const struct hutch_files_wopts *o,
			     struct hutch_err *err)
{
	_cleanup_close_ int dir = -1;
	_cleanup_close_ int fd = -1;
	char tmp[64];
	const char *last;

	if (!*rel)
		return hutch_err_setx(err, EINVAL, "cannot write '%s': it is the workspace itself",
				      path);
	dir = hutch_files_parent(root, rel, true, o->own, &last, err);
	if (dir < 0 || refuse_directory(dir, last, path, err) < 0)
		return -1;
	fd = create_temp(dir, tmp, sizeof(tmp), path, err);
	if (fd < 0)
		return -1;
	if (fill_temp(fd, src, o, path, err) < 0 || finish_temp(fd, o, path, err) < 0)
		goto out_unlink;
	if (renameat(dir, tmp, dir, last) < 0) {
		hutch_err_set(err, errno, "cannot rename a temp file to '%s'", path);
		goto out_unlink;
	}
	return 0;
out_unlink:
	unlinkat(dir, tmp, 0);
	return -1;
}

static int create_temp_symlink(int dir, const char *target, char *name, size_t size,
			       const char *path, struct hutch_err *err)
{
	for (int i = 0; i < 16; i++) {
		temp_name(name, size);
		if (symlinkat(target, dir, name) == 0)
			return 0;
		if (errno != EEXIST)
			return hutch_err_set(err, errno, "cannot create symlink '%s'", path);
	}
	return hutch_err_setx(err, EEXIST, "cannot find a free temp name for '%s'", path);
}

int hutch_files_symlink(int root, const char *rel, const char *target,
			const struct hutch_files_owner *own, struct hutch_err *err)
{
	_cleanup_close_ int dir = -1;
	const char *last;
	char tmp[64];

	dir = hutch_files_parent(root, rel, true, own, &last, err);
	if (dir < 0 || refuse_directory(dir, last, rel, err) < 0)
		return -1;
	if (create_temp_symlink(dir, target, tmp, sizeof(tmp), rel, err) < 0)
		return -1;
	if (hutch_files_chown(dir, tmp, AT_SYMLINK_NOFOLLOW, own, rel, err) < 0)
		goto out_unlink;
	/* the same atomic replace as for files: never a moment without rel */
	if (renameat(dir, tmp, dir, last) < 0) {
		hutch_err_set(err, errno, "cannot rename a temp symlink to '%s'", rel);
		goto out_unlink;
	}
	return 0;
out_unlink:
	unlinkat(dir, tmp, 0);
	return -1;
}

/* --- writes: the two sources --- */

struct mem_source {
	struct hutch_files_source base;
	const void *data;
	size_t len;
};

static ssize_t mem_next(struct hutch_files_source *src, const void **chunk, struct hutch_err *err)
{
	struct mem_source *m = (struct mem_source *)src;
	size_t n = m->len;

	(void)err;
	*chunk = m->data;
	m->len = 0;
	return (ssize_t)n;
}

struct fd_source {
	struct hutch_files_source base;
	int fd;
	char *buf;
	const char *path;
};

static ssize_t fd_next(struct hutch_files_source *src, const void **chunk, struct hutch_err *err)
{
	struct fd_source *f = (struct fd_source *)src;
	ssize_t n = HUTCH_RETRY(read(f->fd, f->buf, CHUNK));

	if (n < 0)
		return hutch_err_set(err, errno, "cannot read the data for '%s'", f->path);
	*chunk = f->buf;
	return n;
}

static mode_t file_mode(const struct hutch_files_owner *own)
{
	return own && own->mode ? own->mode & 0777 : 0644;
}

int hutch_files_write(int root, const char *path, const void *data, size_t len,
		      const struct hutch_files_owner *own, uint64_t max_bytes,
		      struct hutch_err *err)
{
	struct mem_source src = {{mem_next}, data, len};
	struct hutch_files_wopts o = {own, file_mode(own), max_bytes, true, NULL};
	char rel[PATH_MAX];

	if (hutch_files_norm(path, true, rel, sizeof(rel), err) < 0)
		return -1;
	/* before touching the disk at all */
	if (len > max_bytes)
		return too_big(err, path, max_bytes);
	return hutch_files_write_atomic(root, path, rel, &src.base, &o, err);
}

int hutch_files_write_fd(int root, const char *path, int in_fd, const struct hutch_files_owner *own,
			 uint64_t max_bytes, struct hutch_err *err)
{
	_cleanup_free_ char *buf = hutch_xmalloc(CHUNK);
	struct fd_source src = {{fd_next}, in_fd, buf, path};
	struct hutch_files_wopts o = {own, file_mode(own), max_bytes, true, NULL};
	char rel[PATH_MAX];

	if (hutch_files_norm(path, true, rel, sizeof(rel), err) < 0)
		return -1;
	return hutch_files_write_atomic(root, path, rel, &src.base, &o, err);
}

/* --- reads --- */

/* How many bytes [offset, offset + length) covers in a file of `size`. */
static uint64_t range_length(uint64_t size, uint64_t offset, uint64_t length)
{
	if (offset >= size)
		return 0;
	if (length == 0 || length > size - offset)
		return size - offset;
	return length;
}

static int read_range(int fd, uint64_t offset, uint64_t want, struct hutch_buf *out,
		      const char *path, struct hutch_err *err)
{
	_cleanup_free_ char *buf = hutch_xmalloc(CHUNK);
	size_t start = out->len;

	while (want > 0) {
		size_t n = want < CHUNK ? (size_t)want : CHUNK;
		ssize_t r = HUTCH_RETRY(pread(fd, buf, n, (off_t)offset));
		if (r < 0) {
			/* leave out as it was */
			if (out->data) {
				out->len = start;
				out->data[start] = '\0';
			}
			return hutch_err_set(err, errno, "cannot read '%s'", path);
		}
		if (r == 0)
			break; /* shrunk since fstat */
		hutch_buf_append(out, buf, (size_t)r);
		offset += (uint64_t)r;
		want -= (uint64_t)r;
	}
	return 0;
}

int hutch_files_read(int root, const char *path, uint64_t offset, uint64_t length,
		     uint64_t max_bytes, struct hutch_buf *out, struct hutch_err *err)
{
	_cleanup_close_ int fd = -1;
	char rel[PATH_MAX];
	struct stat st;
	uint64_t want;

	if (hutch_files_norm(path, true, rel, sizeof(rel), err) < 0)
		return -1;
	if (offset > INT64_MAX)
		return hutch_err_setx(err, EINVAL, "offset %" PRIu64 " is too large", offset);
	/* O_NONBLOCK: opening a fifo must not wait for a writer; O_NOFOLLOW:
	 * the last component is never followed */
	fd = hutch_files_openat2(root, rel, O_RDONLY | O_NONBLOCK | O_NOFOLLOW, 0);
	if (fd < 0 && errno == ENXIO) /* a socket */
		return hutch_err_setx(err, EINVAL, "'%s' is not a regular file", path);
	if (fd < 0)
		return hutch_files_open_failed(err, path);
	if (fstat(fd, &st) < 0)
		return hutch_err_set(err, errno, "cannot stat '%s'", path);
	if (S_ISDIR(st.st_mode))
		return hutch_err_setx(err, EISDIR, "'%s' is a directory", path);
	if (!S_ISREG(st.st_mode))
		return hutch_err_setx(err, EINVAL, "'%s' is not a regular file", path);
	want = range_length((uint64_t)st.st_size, offset, length);
	if (want > max_bytes)
		return hutch_err_setx(err, EFBIG,
				      "reading %" PRIu64
				      " bytes of '%s' is over the limit of %" PRIu64 " bytes",
				      want, path, max_bytes);
	return read_range(fd, offset, want, out, path, err);
}

/* --- mkdir, move --- */

int hutch_files_mkdir(int root, const char *path, const struct hutch_files_owner *own,
		      struct hutch_err *err)
{
	char rel[PATH_MAX];
	int fd;

	if (hutch_files_norm(path, true, rel, sizeof(rel), err) < 0)
		return -1;
	fd = hutch_files_make_dirs(root, rel, own, EEXIST, err);
	if (fd < 0)
		return hutch_err_prefix(err, "mkdir '%s'", path);
	close(fd);
	return 0;
}

int hutch_files_move(int root, const char *from, const char *to, bool overwrite,
		     struct hutch_err *err)
{
	char frel[PATH_MAX];
	char trel[PATH_MAX];
	_cleanup_close_ int fdir = -1;
	_cleanup_close_ int tdir = -1;
	const char *flast;
	const char *tlast;

	if (hutch_files_norm(from, true, frel, sizeof(frel), err) < 0 ||
	    hutch_files_norm(to, true, trel, sizeof(trel), err) < 0)
		return -1;
	if (!*frel || !*trel)
		return hutch_err_setx(err, EINVAL, "cannot move '%s' to '%s': the workspace itself",
				      from, to);
	fdir = hutch_files_parent(root, frel, false, NULL, &flast, err);
	if (fdir < 0)
		return -1;
	tdir = hutch_files_parent(root, trel, false, NULL, &tlast, err);
	if (tdir < 0)
		return -1;
	/* rename(2) acts on the names themselves: a symlink is moved, not
	 * followed, at either end */
	if (renameat2(fdir, flast, tdir, tlast, overwrite ? 0 : RENAME_NOREPLACE) < 0)
		return hutch_err_set(err, errno, "cannot move '%s' to '%s'", from, to);
	return 0;
}
