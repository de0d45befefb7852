#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "api/frame.h"
#include "util/err.h"
#include "util/mem.h"

int hutch_frame_write(int fd, char type, const void *payload, size_t len)
{
	unsigned char head[5];
	uint32_t n = (uint32_t)len + 1;
	struct iovec iov[2] = {{head, 5}, {(void *)payload, len}};
	size_t total = 5 + len;

	if (len >= HUTCH_FRAME_MAX) {
		errno = EMSGSIZE;
		return -1;
	}
	head[0] = (unsigned char)n;
	head[1] = (unsigned char)(n >> 8);
	head[2] = (unsigned char)(n >> 16);
	head[3] = (unsigned char)(n >> 24);
	head[4] = (unsigned char)type;
	while (total > 0) {
		struct msghdr msg = {.msg_iov = iov, .msg_iovlen = 2};
		ssize_t w = sendmsg(fd, &msg, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == ENOTSOCK)
			w = writev(fd, iov, 2);
		if (w <= 0)
			return -1;
		total -= (size_t)w;
		for (int i = 0; i < 2 && w > 0; i++) {
			size_t take = (size_t)w < iov[i].iov_len ? (size_t)w : iov[i].iov_len;
			iov[i].iov_base = (char *)iov[i].iov_base + take;
			iov[i].iov_len -= take;
			w -= (ssize_t)take;
		}
	}
	return 0;
}

/* 1 when len bytes were read, 0 at EOF before any, -1 otherwise (errno 0
 * when the peer closed midway). */
static int read_full(int fd, void *buf, size_t len)
{
	size_t done = 0;

	errno = 0;
	while (done < len) {
		ssize_t n = read(fd, (char *)buf + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return done == 0 && n == 0 ? 0 : -1;
		done += (size_t)n;
	}
	return 1;
}

int hutch_frame_read(int fd, char *type, char **payload, size_t *len, struct hutch_err *err)
{
	unsigned char head[5];
	uint32_t n;
	int rc = read_full(fd, head, 5);

	*payload = NULL;
	if (rc == 0)
		return 0;
	if (rc < 0 && errno)
		return hutch_err_set(err, errno, "read frame header");
	if (rc < 0)
		return hutch_err_setx(err, EPROTO, "truncated frame header (5 bytes needed)");
	n = (uint32_t)head[0] | (uint32_t)head[1] << 8 | (uint32_t)head[2] << 16 |
	    (uint32_t)head[3] << 24;
	if (n == 0)
		return hutch_err_setx(err, EPROTO, "frame of length 0");
	if (n - 1 > HUTCH_FRAME_MAX)
		return hutch_err_setx(err, EMSGSIZE, "frame of %u bytes is over the %u byte limit",
				      n, HUTCH_FRAME_MAX);
	*type = (char)head[4];
	*len = n - 1;
	*payload = hutch_xmalloc(*len + 1);
	if (*len && read_full(fd, *payload, *len) != 1) {
		free(*payload);
		*payload = NULL;
		return hutch_err_setx(err, EPROTO, "truncated frame");
	}
	(*payload)[*len] = '\0';
	return 1;
}
