/* The files API over directories (files.h): the tree walker, and list,
 * stat, remove and usage on top of it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "session/files.h"
#include "session/files_internal.h"
#include "util/cleanup.h"
#include "util/err.h"
#include "util/mem.h"
#include "util/text.h"

/* --- reading a directory --- */

static int compare_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void hutch_files_free_names(char **names, size_t count)
{
	for (size_t i = 0; i < count; i++)
		free(names[i]);
	free(names);
}

int hutch_files_read_names(int dirfd, char ***names, size_t *count, struct hutch_err *err)
{
	/* "." of dirfd: a readable fd of the same directory, whatever dirfd is */
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	_cleanup_closedir_ DIR *d = NULL;
	char **v = NULL;
	size_t n = 0;
	size_t cap = 0;
	struct dirent *de;

	if (fd < 0)
		return hutch_err_set(err, errno, "cannot open a directory for reading");
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return hutch_err_set(err, errno, "cannot read a directory");
	}
	errno = 0;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			v = hutch_xrealloc(v, cap * sizeof(*v));
		}
		v[n++] = hutch_xstrdup(de->d_name);
	}
	if (errno) {
		hutch_files_free_names(v, n);
		return hutch_err_set(err, errno, "cannot read a directory");
	}
	if (n > 1)
		qsort(v, n, sizeof(*v), compare_names);
	*names = v;
	*count = n;
	return 0;
}

/* --- the walker ---
 *
 * Depth-first, one directory fd at a time. Going down opens the child with
 * O_NOFOLLOW | O_DIRECTORY from the parent's fd, so a symlink planted
 * anywhere is never entered. Going up opens ".." and checks it is the
 * directory we came from (dev and inode): if code in the sandbox moved
 * something meanwhile we stop with EAGAIN instead of working on the wrong
 * directory. Holding only the current fd keeps deep trees (which the
 * sandbox can make cheaply) from exhausting the daemon's fds. */

struct frame {
	char **names; /* the directory's entries, read before walking them */
	size_t count;
	size_t next;
	dev_t dev;
	ino_t ino;
	size_t path_len; /* length of the directory's own path in walk.path */
};

struct walk {
	const struct hutch_files_walk_ops *ops;
	void *ctx;
	int fd; /* the directory of the top frame */
	dev_t top_dev;
	struct frame *frames;
	size_t depth;
	size_t cap;
	struct hutch_buf path;
};

/* walk.path = the path of the current directory, cut to len, + "/" + name */
static void path_set(struct walk *w, size_t len, const char *name)
{
	if (w->path.data) {
		w->path.len = len;
		w->path.data[len] = '\0';
	}
	if (name) {
		if (len)
			hutch_buf_append(&w->path, "/", 1);
		hutch_buf_puts(&w->path, name);
	}
}

static int push_frame(struct walk *w, int fd, struct hutch_err *err)
{
	struct frame f = {0};
	struct stat st;

	if (fstat(fd, &st) < 0)
		return hutch_err_set(err, errno, "cannot stat '%s'", w->path.data);
	if (hutch_files_read_names(fd, &f.names, &f.count, err) < 0)
		return hutch_err_prefix(err, "'%s'", w->path.data);
	f.dev = st.st_dev;
	f.ino = st.st_ino;
	f.path_len = w->path.len;
	if (w->depth == w->cap) {
		w->cap = w->cap ? w->cap * 2 : 16;
		w->frames = hutch_xrealloc(w->frames, w->cap * sizeof(*w->frames));
	}
	w->frames[w->depth++] = f;
	return 0;
}

static int go_down(struct walk *w, const char *name, struct hutch_err *err)
{
	int fd;

	if (w->depth >= HUTCH_FILES_MAX_DEPTH)
		return hutch_err_setx(err, ELOOP, "'%s' is nested deeper than %d levels",
				      w->path.data, HUTCH_FILES_MAX_DEPTH);
	fd = openat(w->fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT)
		return 0; /* gone meanwhile */
	if (fd < 0)
		return hutch_err_set(err, errno, "cannot open directory '%s'", w->path.data);
	if (push_frame(w, fd, err) < 0) {
		close(fd);
		return -1;
	}
	close(w->fd);
	w->fd = fd;
	return 0;
}

static int go_up(struct walk *w, struct hutch_err *err)
{
	struct frame *f = &w->frames[--w->depth];
	size_t path_len = f->path_len;
	struct frame *parent;
	struct stat st;
	int up;

	hutch_files_free_names(f->names, f->count);
	if (w->depth == 0)
		return 0; /* back at the top: done */
	parent = &w->frames[w->depth - 1];
	path_set(w, path_len, NULL);
	up = openat(w->fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (up < 0 || fstat(up, &st) < 0) {
		hutch_err_set(err, errno, "cannot go back up from '%s'", w->path.data);
		if (up >= 0)
			close(up);
		return -1;
	}
	if (st.st_dev != parent->dev || st.st_ino != parent->ino) {
		close(up);
		return hutch_err_setx(err, EAGAIN, "'%s' was moved during the walk", w->path.data);
	}
	close(w->fd);
	w->fd = up;
	if (!w->ops->leave)
		return 0;
	return w->ops->leave(w->ctx, w->fd, parent->names[parent->next - 1], w->path.data, err);
}

static int step(struct walk *w, struct hutch_err *err)
{
	struct frame *f = &w->frames[w->depth - 1];
	const char *name;
	struct stat st;
	int r;

	if (f->next == f->count)
		return go_up(w, err);
	name = f->names[f->next++];
	path_set(w, f->path_len, name);
	if (fstatat(w->fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT
			       ? 0
			       : hutch_err_set(err, errno, "cannot stat '%s'", w->path.data);
	r = w->ops->enter(w->ctx, w->fd, name, w->path.data, &st, err);
	if (r <= 0)
		return r;
	/* never into another filesystem: a mount could cover anything */
	if (!S_ISDIR(st.st_mode) || st.st_dev != w->top_dev)
		return 0;
	return go_down(w, name, err);
}

int hutch_files_walk(int dirfd, const struct hutch_files_walk_ops *ops, void *ctx,
		     struct hutch_err *err)
{
	struct walk w = {.ops = ops, .ctx = ctx, .fd = -1, .path = HUTCH_BUF_INIT};
	int rc;

	hutch_buf_puts(&w.path, "");
	w.fd = openat(dirfd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (w.fd < 0)
		return hutch_err_set(err, errno, "cannot open a directory to walk");
	rc = push_frame(&w, w.fd, err);
	if (rc == 0)
		w.top_dev = w.frames[0].dev;
	while (rc == 0 && w.depth > 0)
		rc = step(&w, err);
	while (w.depth > 0) {
		w.depth--;
		hutch_files_free_names(w.frames[w.depth].names, w.frames[w.depth].count);
	}
	free(w.frames);
	hutch_buf_release(&w.path);
	close(w.fd);
	return rc;
}

/* --- JSON entries --- */

static const char *type_name(mode_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG:
		return "file";
	case S_IFDIR:
		return "dir";
	case S_IFLNK:
		return "symlink";
	case S_IFIFO:
		return "fifo";
	case S_IFSOCK:
		return "socket";
	case S_IFCHR:
		return "char";
	case S_IFBLK:
		return "block";
	default:
		return "other";
	}
}

/* json_string() refuses bytes that are not UTF-8, and file names are
 * any bytes: show those with U+FFFD rather than fail the listing */
static json_t *text_json(const char *s)
{
	size_t len = strlen(s);
	char *clean;
	json_t *j;

	if (hutch_utf8_valid(s, len))
		return json_stringn(s, len);
	clean = hutch_utf8_sanitize(s, len, &len);
	j = json_stringn(clean, len);
	free(clean);
	return j;
}

/* The entry `name` in dirfd (name "" with AT_EMPTY_PATH: dirfd itself),
 * called `label` in the result. */
static json_t *entry_json(int dirfd, const char *name, const char *label, const struct stat *st)
{
	char mode[16];
	json_t *o = json_object();

	snprintf(mode, sizeof(mode), "%04o", (unsigned)(st->st_mode & 07777));
	json_object_set_new(o, "name", text_json(label));
	json_object_set_new(o, "type", json_string(type_name(st->st_mode)));
	json_object_set_new(o, "size", json_integer((json_int_t)st->st_size));
	json_object_set_new(o, "mode", json_string(mode));
	json_object_set_new(o, "mtime", json_integer((json_int_t)st->st_mtim.tv_sec));
	if (S_ISLNK(st->st_mode)) {
		char target[PATH_MAX];
		ssize_t n = readlinkat(dirfd, name, target, sizeof(target) - 1);
		target[n > 0 ? n : 0] = '\0';
		json_object_set_new(o, "target", text_json(target));
	}
	return o;
}

json_t *hutch_files_list(int root, const char *path, struct hutch_err *err)
{
	_cleanup_close_ int fd = -1;
	char rel[PATH_MAX];
	char **names = NULL;
	size_t count = 0;
	json_t *arr;

	if (hutch_files_norm(path, true, rel, sizeof(rel), err) < 0)
		return NULL;
	/* O_NOFOLLOW: a symlink to a directory is listed as a symlink by its
	 * parent, not entered */
	fd = hutch_files_openat2(root, rel, O_PATH | O_DIRECTORY | O_NOFOLLOW, 0);
	if (fd < 0) {
		if (errno == ENOTDIR || errno == ELOOP)
			hutch_err_setx(err, ENOTDIR, "'%s' is not a directory", path);
		else
			hutch_files_open_failed(err, path);
		return NULL;
	}
	if (hutch_files_read_names(fd, &names, &count, err) < 0) {
		hutch_err_prefix(err, "list '%s'", path);
		return NULL;
	}
	arr = json_array();
	for (size_t i = 0; i < count; i++) {
		struct stat st;
		if (fstatat(fd, names[i], &st, AT_SYMLINK_NOFOLLOW) == 0)
			json_array_append_new(arr, entry_json(fd, names[i], names[i], &st));
	}
	hutch_files_free_names(names, count);
	return arr;
}

/* The path as given, normalised: "a/b" or "/workspace/a/b" (or the root) */
static void display_name(const char *path, const char *rel, char *out, size_t size)
{
	if (path[0] == '/')
		snprintf(out, size, "%s%s%s", HUTCH_WORKSPACE, *rel ? "/" : "", rel);
	else
		snprintf(out, size, "%s", *rel ? rel : ".");
}

json_t *hutch_files_stat(int root, const char *path, struct hutch_err *err)
{
	_cleanup_close_ int dir = -1;
	char rel[PATH_MAX];
	char label[PATH_MAX + 16];
	const char *last = "";
	int flags = AT_EMPTY_PATH;
	struct stat st;

	if (hutch_files_norm(path, true, rel, sizeof(rel), err) < 0)
		return NULL;
	display_name(path, rel, label, sizeof(label));
	if (*rel) {
		dir = hutch_files_parent(root, rel, false, NULL, &last, err);
		if (dir < 0)
			return NULL;
		flags = AT_SYMLINK_NOFOLLOW;
	}
	if (fstatat(*rel ? dir : root, last, &st, flags) < 0) {
		hutch_err_set(err, errno, "cannot stat '%s'", path);
		return NULL;
	}
	return entry_json(*rel ? dir : root, last, label, &st);
}

/* --- remove --- */

/* A directory we may not read or write (mode 0500, 0000: code in the
 * sandbox can do that) would stop a rootless daemon; root ignores modes
 * anyway. fchmodat(AT_SYMLINK_NOFOLLOW) never follows a swapped-in link
 * (glibc pins the inode with O_PATH). Failure is left to the next step. */
static void make_removable(int dirfd, const char *name, const struct stat *st)
{
	if ((st->st_mode & 0700) == 0700)
		return;
	if (fchmodat(dirfd, name, (st->st_mode & 07777) | 0700, AT_SYMLINK_NOFOLLOW) < 0)
		return; /* the step that needed it reports the error */
}

static int remove_enter(void *ctx, int dirfd, const char *name, const char *path,
			const struct stat *st, struct hutch_err *err)
{
	(void)ctx;
	if (S_ISDIR(st->st_mode)) {
		make_removable(dirfd, name, st);
		return 1; /* its contents first; rmdir in remove_leave */
	}
	if (unlinkat(dirfd, name, 0) < 0 && errno != ENOENT)
		return hutch_err_set(err, errno, "cannot remove '%s'", path);
	return 0;
}

static int remove_leave(void *ctx, int dirfd, const char *name, const char *path,
			struct hutch_err *err)
{
	(void)ctx;
	if (unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		return hutch_err_set(err, errno, "cannot remove directory '%s'", path);
	return 0;
}

static const struct hutch_files_walk_ops remove_ops = {remove_enter, remove_leave};

/* Empty the directory `last` in dir; walked from an fd opened with
 * O_NOFOLLOW, so a symlink swapped in for it is refused, not followed. */
static int empty_dir(int dir, const char *last, const char *path, const struct stat *st,
		     struct hutch_err *err)
{
	_cleanup_close_ int fd = -1;

	make_removable(dir, last, st);
	fd = openat(dir, last, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return hutch_err_set(err, errno, "cannot open directory '%s'", path);
	if (hutch_files_walk(fd, &remove_ops, NULL, err) < 0)
		return hutch_err_prefix(err, "remove '%s'", path);
	return 0;
}

int hutch_files_remove(int root, const char *path, bool recursive, struct hutch_err *err)
{
	_cleanup_close_ int dir = -1;
	char rel[PATH_MAX];
	const char *last;
	struct stat st;

	if (hutch_files_norm(path, true, rel, sizeof(rel), err) < 0)
		return -1;
	if (!*rel)
		return hutch_err_setx(err, EINVAL, "cannot remove '%s': it is the workspace itself",
				      path);
	dir = hutch_files_parent(root, rel, false, NULL, &last, err);
	if (dir < 0)
		return -1;
	if (fstatat(dir, last, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return hutch_err_set(err, errno, "cannot remove '%s'", path);
	if (!S_ISDIR(st.st_mode)) {
		if (unlinkat(dir, last, 0) < 0)
			return hutch_err_set(err, errno, "cannot remove '%s'", path);
		return 0;
	}
	if (recursive && empty_dir(dir, last, path, &st, err) < 0)
		return -1;
	if (unlinkat(dir, last, AT_REMOVEDIR) < 0) {
		if (errno == ENOTEMPTY && !recursive)
			return hutch_err_setx(err, ENOTEMPTY,
					      "directory '%s' is not empty (remove it recursively)",
					      path);
		return hutch_err_set(err, errno, "cannot remove directory '%s'", path);
	}
	return 0;
}

/* --- usage --- */

struct usage {
	uint64_t bytes;
	uint64_t inodes;
	/* files with several links, to count each inode once at the end */
	struct link {
		ino_t ino;
		uint64_t bytes;
	} * links;
	size_t nlinks;
	size_t cap;
};

static int usage_enter(void *ctx, int dirfd, const char *name, const char *path,
		       const struct stat *st, struct hutch_err *err)
{
	struct usage *u = ctx;

	(void)dirfd;
	(void)name;
	(void)path;
	(void)err;
	u->bytes += (uint64_t)st->st_blocks * 512;
	u->inodes++;
	if (!S_ISDIR(st->st_mode) && st->st_nlink > 1) {
		if (u->nlinks == u->cap) {
			u->cap = u->cap ? u->cap * 2 : 64;
			u->links = hutch_xrealloc(u->links, u->cap * sizeof(*u->links));
		}
		u->links[u->nlinks++] = (struct link){st->st_ino, (uint64_t)st->st_blocks * 512};
	}
	return S_ISDIR(st->st_mode) ? 1 : 0;
}

static int compare_links(const void *a, const void *b)
{
	ino_t x = ((const struct link *)a)->ino;
	ino_t y = ((const struct link *)b)->ino;

	return x < y ? -1 : x > y;
}

/* The walk stays on one filesystem, so the inode number alone identifies */
static void uncount_duplicate_links(struct usage *u)
{
	if (u->nlinks > 1)
		qsort(u->links, u->nlinks, sizeof(*u->links), compare_links);
	for (size_t i = 1; i < u->nlinks; i++) {
		if (u->links[i].ino == u->links[i - 1].ino) {
			u->bytes -= u->links[i].bytes;
			u->inodes--;
		}
	}
}

int hutch_files_usage(int root, uint64_t *bytes, uint64_t *inodes, struct hutch_err *err)
{
	static const struct hutch_files_walk_ops ops = {usage_enter, NULL};
	struct usage u = {0};
	struct stat st;
	int rc;

	if (fstat(root, &st) < 0)
		return hutch_err_set(err, errno, "cannot stat the workspace");
	u.bytes = (uint64_t)st.st_blocks * 512;
	u.inodes = 1;
	rc = hutch_files_walk(root, &ops, &u, err);
	uncount_duplicate_links(&u);
	free(u.links);
	if (rc < 0)
		return hutch_err_prefix(err, "disk usage");
	*bytes = u.bytes;
	*inodes = u.inodes;
	return 0;
}
