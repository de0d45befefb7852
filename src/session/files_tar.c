/* The files API's archives (files.h): tar out through the tree walker, tar
 * in through our own in-root resolution. libarchive only (de)serialises:
 * its disk writer resolves names on the host's path, which is exactly
 * what code in the sandbox could aim with symlinks, so it is never used. */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "session/files.h"
#include "session/files_internal.h"
#include "util/cleanup.h"
#include "util/err.h"
#include "util/mem.h"

#define CHUNK ((size_t)64 * 1024)

static const char *archive_msg(struct archive *a)
{
	const char *s = archive_error_string(a);

	return s ? s : "unknown error";
}

/* --- tar out --- */

struct tar_out {
	struct archive *a;
	char *buf; /* CHUNK bytes */
};

static struct archive_entry *new_entry(const char *path, const struct stat *st)
{
	struct archive_entry *e = archive_entry_new();

	archive_entry_copy_pathname(e, path);
	archive_entry_set_filetype(e, st->st_mode & S_IFMT);
	archive_entry_set_perm(e, st->st_mode & 07777);
	archive_entry_set_uid(e, st->st_uid);
	archive_entry_set_gid(e, st->st_gid);
	archive_entry_set_mtime(e, st->st_mtim.tv_sec, st->st_mtim.tv_nsec);
	archive_entry_set_size(e, S_ISREG(st->st_mode) ? st->st_size : 0);
	return e;
}

static int put_header(struct tar_out *t, struct archive_entry *e, const char *path,
		      struct hutch_err *err)
{
	/* WARN: e.g. a name that is not text in the locale; stored as bytes */
	int r = archive_write_header(t->a, e);

	archive_entry_free(e);
	if (r < ARCHIVE_WARN)
		return hutch_err_setx(err, EIO, "cannot archive '%s': %s", path, archive_msg(t->a));
	return 0;
}

static int copy_data(struct tar_out *t, int fd, uint64_t size, const char *path,
		     struct hutch_err *err)
{
	while (size > 0) {
		size_t want = size < CHUNK ? (size_t)size : CHUNK;
		ssize_t n = HUTCH_RETRY(read(fd, t->buf, want));
		if (n < 0)
			return hutch_err_set(err, errno, "cannot read '%s'", path);
		if (n == 0)
			break; /* shrunk since fstat: libarchive pads the entry */
		if (archive_write_data(t->a, t->buf, (size_t)n) < 0)
			return hutch_err_setx(err, EIO, "cannot archive '%s': %s", path,
					      archive_msg(t->a));
		size -= (uint64_t)n;
	}
	return 0;
}

static int put_file(struct tar_out *t, int dirfd, const char *name, const char *path,
		    struct hutch_err *err)
{
	/* O_NOFOLLOW | O_NONBLOCK, then fstat: what we archive is what we
	 * opened, even if the name was swapped for a link or a fifo */
	_cleanup_close_ int fd =
		openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;

	if (fd < 0 && (errno == ENOENT || errno == ELOOP || errno == ENXIO))
		return 0; /* gone or swapped since the walk saw it */
	if (fd < 0 || fstat(fd, &st) < 0)
		return hutch_err_set(err, errno, "cannot open '%s'", path);
	if (!S_ISREG(st.st_mode))
		return 0;
	if (put_header(t, new_entry(path, &st), path, err) < 0)
		return -1;
	return copy_data(t, fd, (uint64_t)st.st_size, path, err);
}

static int put_symlink(struct tar_out *t, int dirfd, const char *name, const char *path,
		       const struct stat *st, struct hutch_err *err)
{
	char target[PATH_MAX];
	ssize_t n = readlinkat(dirfd, name, target, sizeof(target) - 1);
	struct archive_entry *e;

	if (n < 0)
		return errno == ENOENT ? 0
				       : hutch_err_set(err, errno, "cannot read link '%s'", path);
	target[n] = '\0';
	e = new_entry(path, st);
	archive_entry_copy_symlink(e, target);
	return put_header(t, e, path, err);
}

static int tar_enter(void *ctx, int dirfd, const char *name, const char *path,
		     const struct stat *st, struct hutch_err *err)
{
	struct tar_out *t = ctx;

	switch (st->st_mode & S_IFMT) {
	case S_IFREG:
		return put_file(t, dirfd, name, path, err);
	case S_IFDIR:
		return put_header(t, new_entry(path, st), path, err) < 0 ? -1 : 1;
	case S_IFLNK:
		return put_symlink(t, dirfd, name, path, st, err);
	default:
		return 0; /* fifos, sockets, devices: no content to give */
	}
}

static const struct hutch_files_walk_ops tar_ops = {tar_enter, NULL};

/* The contents of a directory, or a single entry named by its last component */
static int tar_target(struct tar_out *t, int root, const char *rel, const char *path,
		      struct hutch_err *err)
{
	_cleanup_close_ int dir = -1;
	_cleanup_close_ int fd = -1;
	const char *last;
	struct stat st;

	if (!*rel)
		return hutch_files_walk(root, &tar_ops, t, err);
	dir = hutch_files_parent(root, rel, false, NULL, &last, err);
	if (dir < 0)
		return -1;
	if (fstatat(dir, last, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return hutch_err_set(err, errno, "cannot archive '%s'", path);
	if (!S_ISDIR(st.st_mode))
		return tar_enter(t, dir, last, last, &st, err) < 0 ? -1 : 0;
	fd = openat(dir, last, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return hutch_err_set(err, errno, "cannot open directory '%s'", path);
	return hutch_files_walk(fd, &tar_ops, t, err);
}

static struct archive *open_writer(int out_fd, struct hutch_err *err)
{
	struct archive *a = archive_write_new();

	/* pax: ustar headers, with pax records only when a name or size needs
	 * them. hdrcharset=BINARY stores names as the bytes they are, with no
	 * locale conversion (file names need not be text). */
	if (archive_write_set_format_pax_restricted(a) != ARCHIVE_OK ||
	    archive_write_set_options(a, "hdrcharset=BINARY") != ARCHIVE_OK ||
	    archive_write_open_fd(a, out_fd) != ARCHIVE_OK) {
		hutch_err_setx(err, EIO, "cannot start an archive: %s", archive_msg(a));
		archive_write_free(a);
		return NULL;
	}
	return a;
}

int hutch_files_tar_out(int root, const char *path, int out_fd, struct hutch_err *err)
{
	_cleanup_free_ char *buf = hutch_xmalloc(CHUNK);
	struct tar_out t = {NULL, buf};
	char rel[PATH_MAX];
	int rc;

	if (hutch_files_norm(path, true, rel, sizeof(rel), err) < 0)
		return -1;
	t.a = open_writer(out_fd, err);
	if (!t.a)
		return -1;
	rc = tar_target(&t, root, rel, path, err);
	/* close writes the end-of-archive blocks: only for a whole archive */
	if (rc == 0 && archive_write_close(t.a) != ARCHIVE_OK)
		rc = hutch_err_setx(err, EIO, "cannot finish the archive of '%s': %s", path,
				    archive_msg(t.a));
	archive_write_free(t.a);
	return rc;
}

/* --- tar in --- */

struct tar_in {
	int root;
	const char *path; /* the destination, as the user gave it */
	char dest[PATH_MAX];
	const struct hutch_files_owner *own;
	uint64_t max_bytes;
	uint64_t used; /* bytes of files extracted so far */
	struct archive *a;
	char *buf; /* CHUNK bytes */
};

struct entry_source {
	struct hutch_files_source base;
	struct tar_in *t;
	const char *name;
};

static ssize_t entry_next(struct hutch_files_source *src, const void **chunk, struct hutch_err *err)
{
	struct entry_source *s = (struct entry_source *)src;
	la_ssize_t n = archive_read_data(s->t->a, s->t->buf, CHUNK);

	if (n < 0)
		return hutch_err_setx(err, EINVAL, "cannot read '%s' from the archive: %s", s->name,
				      archive_msg(s->t->a));
	*chunk = s->t->buf;
	return (ssize_t)n;
}

static int over_limit(struct tar_in *t, struct hutch_err *err)
{
	return hutch_err_setx(err, EFBIG,
			      "the archive for '%s' holds more than the limit of %" PRIu64 " bytes",
			      t->path, t->max_bytes);
}

/* No setuid/setgid/sticky and no group or world write: the archive comes
 * from outside and the files land where the sandbox runs code. */
static mode_t entry_mode(struct archive_entry *e)
{
	return archive_entry_perm(e) & 0777 & ~(mode_t)022;
}

static int extract_file(struct tar_in *t, struct archive_entry *e, const char *rel,
			const char *name, struct hutch_err *err)
{
	uint64_t left = t->max_bytes - t->used;
	uint64_t written = 0;
	struct entry_source src = {{entry_next}, t, name};
	struct hutch_files_wopts o = {t->own, entry_mode(e), left, false, &written};

	/* fail before writing when the header already says too much; the
	 * copy checks again, as the header can lie (sparse entries) */
	if (archive_entry_size_is_set(e) && (uint64_t)archive_entry_size(e) > left)
		return over_limit(t, err);
	/* not fsync'ed: thousands of small files would take seconds each */
	if (hutch_files_write_atomic(t->root, name, rel, &src.base, &o, err) < 0)
		return err->code == EFBIG ? over_limit(t, err) : -1;
	t->used += written;
	return 0;
}

static int extract_dir(struct tar_in *t, struct archive_entry *e, const char *rel, const char *name,
		       struct hutch_err *err)
{
	_cleanup_close_ int dir = hutch_files_make_dirs(t->root, rel, t->own, EEXIST, err);
	_cleanup_close_ int fd = -1;

	if (dir < 0)
		return hutch_err_prefix(err, "archive entry '%s'", name);
	/* fchmod needs an fd opened for reading: "." of the O_PATH one */
	fd = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	/* u+rwx: we still have to create its contents, maybe as non-root */
	if (fd < 0 || fchmod(fd, entry_mode(e) | 0700) < 0)
		return hutch_err_set(err, errno, "cannot chmod '%s'", name);
	return 0;
}

static int extract_symlink(struct tar_in *t, struct archive_entry *e, const char *rel,
			   const char *name, struct hutch_err *err)
{
	const char *target = archive_entry_symlink(e);

	if (!target || !*target)
		return hutch_err_setx(err, EINVAL, "archive entry '%s' is a symlink to nothing",
				      name);
	/* stored as it is: whatever it points to, it is resolved in-root
	 * whenever this API or the sandbox follows it */
	return hutch_files_symlink(t->root, rel, target, t->own, err);
}

/* The entry's path under the root: dest + "/" + its checked name */
static int entry_path(struct tar_in *t, const char *name, char *out, size_t size,
		      struct hutch_err *err)
{
	char rel[PATH_MAX];

	out[0] = '\0';
	if (hutch_files_norm(name, false, rel, sizeof(rel), err) < 0)
		return hutch_err_prefix(err, "archive entry");
	if (!*rel)
		return 0;
	if ((size_t)snprintf(out, size, "%s%s%s", t->dest, *t->dest ? "/" : "", rel) >= size)
		return hutch_err_setx(err, ENAMETOOLONG, "archive entry '%s' is too long", name);
	return 0;
}

static int extract_entry(struct tar_in *t, struct archive_entry *e, struct hutch_err *err)
{
	const char *name = archive_entry_pathname(e);
	char rel[PATH_MAX];

	if (!name)
		return hutch_err_setx(err, EINVAL, "archive entry without a name");
	if (entry_path(t, name, rel, sizeof(rel), err) < 0)
		return -1;
	if (!*rel)
		return 0; /* "./": the destination itself */
	if (archive_entry_hardlink(e))
		return hutch_err_setx(err, EINVAL,
				      "archive entry '%s' is a hard link, which is not supported",
				      name);
	switch (archive_entry_filetype(e)) {
	case AE_IFREG:
		return extract_file(t, e, rel, name, err);
	case AE_IFDIR:
		return extract_dir(t, e, rel, name, err);
	case AE_IFLNK:
		return extract_symlink(t, e, rel, name, err);
	default:
		return 0; /* fifos, sockets, devices: never created */
	}
}

static int extract_all(struct tar_in *t, struct hutch_err *err)
{
	struct archive_entry *e;

	for (;;) {
		int r = archive_read_next_header(t->a, &e);
		if (r == ARCHIVE_EOF)
			return 0;
		if (r != ARCHIVE_OK && r != ARCHIVE_WARN)
			return hutch_err_setx(err, EINVAL, "cannot read the archive: %s",
					      archive_msg(t->a));
		if (extract_entry(t, e, err) < 0)
			return -1;
	}
}

static struct archive *open_reader(int in_fd, struct hutch_err *err)
{
	struct archive *a = archive_read_new();

	/* tar only (plain or gzip): every other format and filter is parser
	 * surface we do not need, and some filters run external programs */
	if (archive_read_support_format_tar(a) != ARCHIVE_OK ||
	    archive_read_support_filter_gzip(a) != ARCHIVE_OK ||
	    archive_read_open_fd(a, in_fd, CHUNK) != ARCHIVE_OK) {
		hutch_err_setx(err, EINVAL, "cannot read the archive: %s", archive_msg(a));
		archive_read_free(a);
		return NULL;
	}
	return a;
}

int hutch_files_tar_in(int root, const char *path, int in_fd, const struct hutch_files_owner *own,
		       uint64_t max_bytes, struct hutch_err *err)
{
	_cleanup_free_ char *buf = hutch_xmalloc(CHUNK);
	struct tar_in t = {root, path, "", own, max_bytes, 0, NULL, buf};
	struct hutch_err e = {0}; /* ours, as err may be NULL and codes are read */
	int rc = -1;
	int fd;

	if (hutch_files_norm(path, true, t.dest, sizeof(t.dest), &e) < 0)
		goto out;
	fd = hutch_files_make_dirs(root, t.dest, own, ENOTDIR, &e);
	if (fd < 0)
		goto out;
	close(fd);
	t.a = open_reader(in_fd, &e);
	if (!t.a)
		goto out;
	rc = extract_all(&t, &e);
	archive_read_free(t.a);
out:
	if (rc < 0 && err)
		*err = e;
	return rc;
}
