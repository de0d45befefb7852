#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cell/mountutil.h"
#include "util/err.h"

/* Small mount and file helpers for the child after clone(): no malloc,
 * errors into err. */

int hutch_path_join(char *out, const char *a, const char *b, struct hutch_err *err)
{
	int n = snprintf(out, PATHBUF, "%s/%s", a, b);

	if (n < 0 || n >= PATHBUF)
		return hutch_err_setx(err, ENAMETOOLONG, "path '%s/%s' too long", a, b);
	return 0;
}

/* Bind src on dst with the given MOUNT_ATTR_* set, through the new mount API
 * so that `recursive` binds get the attributes on every submount too. */
int hutch_bind(const char *src, const char *dst, uint64_t attr, bool recursive,
	       struct hutch_err *err)
{
	struct mount_attr ma = {.attr_set = attr};
	unsigned int rec = recursive ? AT_RECURSIVE : 0;
	int fd = open_tree(AT_FDCWD, src, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | rec);

	if (fd < 0)
		return hutch_err_set(err, errno, "open_tree '%s'", src);
	if (attr && mount_setattr(fd, "", AT_EMPTY_PATH | rec, &ma, sizeof(ma)) < 0) {
		hutch_err_set(err, errno, "mount_setattr '%s'", src);
		close(fd);
		return -1;
	}
	if (move_mount(fd, "", AT_FDCWD, dst, MOVE_MOUNT_F_EMPTY_PATH) < 0) {
		hutch_err_set(err, errno, "bind '%s' on '%s'", src, dst);
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

int hutch_make_file(const char *path, const char *text, mode_t mode, struct hutch_err *err)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	size_t len = text ? strlen(text) : 0;

	if (fd < 0)
		return hutch_err_set(err, errno, "create '%s'", path);
	if (len && write(fd, text, len) != (ssize_t)len) {
		hutch_err_set(err, errno, "write '%s'", path);
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

int hutch_make_dir(const char *path, mode_t mode, struct hutch_err *err)
{
	if (mkdir(path, mode) < 0 && errno != EEXIST)
		return hutch_err_set(err, errno, "mkdir '%s'", path);
	return 0;
}

/* Make a mount point for src at dst: a directory or an empty file. */
int hutch_make_mount_point(const char *src, const char *dst, struct hutch_err *err)
{
	struct stat st;

	if (stat(src, &st) < 0)
		return hutch_err_set(err, errno, "stat '%s'", src);
	if (S_ISDIR(st.st_mode))
		return hutch_make_dir(dst, 0755, err);
	return hutch_make_file(dst, NULL, 0644, err);
}
