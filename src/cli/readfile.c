#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "hutch.h"
#include "util/buf.h"
#include "util/cleanup.h"
#include "util/err.h"

int hutch_cli_read_file(const char *path, size_t max, char **data, size_t *len, unsigned int *mode,
			struct hutch_err *err)
{
	_cleanup_close_ int fd = -1;
	struct hutch_buf b = HUTCH_BUF_INIT;
	struct stat st;
	char chunk[65536];

	fd = strcmp(path, "-") == 0 ? dup(0) : open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return hutch_err_set(err, errno, "cannot open '%s'", path);
	if (fstat(fd, &st) < 0)
		return hutch_err_set(err, errno, "cannot stat '%s'", path);
	/* Devices and directories are refused: /dev/zero would never end. */
	if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode) && !S_ISCHR(st.st_mode) &&
	    !S_ISSOCK(st.st_mode))
		return hutch_err_setx(err, EINVAL, "'%s' is not a regular file", path);
	if (S_ISCHR(st.st_mode) && !isatty(fd))
		return hutch_err_setx(err, EINVAL, "'%s' is a device, not a file", path);
	if (mode)
		*mode = S_ISREG(st.st_mode) ? (st.st_mode & 0777) : 0644;
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			hutch_buf_release(&b);
			return hutch_err_set(err, errno, "cannot read '%s'", path);
		}
		if (n == 0)
			break;
		if (b.len + (size_t)n > max) {
			hutch_buf_release(&b);
			return hutch_err_setx(err, EFBIG, "'%s' is larger than %zu bytes", path,
					      max);
		}
		hutch_buf_append(&b, chunk, (size_t)n);
	}
	*data = hutch_buf_detach(&b, len);
	return 0;
}
