#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/fdpass.h"

#define MAX_FDS 16

int hutch_send_fds(int sock, const void *buf, size_t len, const int *fds, int nfds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * MAX_FDS)];
		struct cmsghdr align;
	} u;
	struct iovec iov = {(void *)buf, len};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	ssize_t n;

	if (nfds < 0 || nfds > MAX_FDS) {
		errno = EINVAL;
		return -1;
	}
	if (nfds > 0) {
		memset(&u, 0, sizeof(u));
		msg.msg_control = u.buf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
	}
	do
		n = sendmsg(sock, &msg, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -1;
	if ((size_t)n != len) {
		errno = EMSGSIZE;
		return -1;
	}
	return 0;
}

/* One recvmsg: bytes into buf, SCM_RIGHTS fds into fds (when fds), the
 * sender's pid from SCM_CREDENTIALS into *pid (when pid). */
static ssize_t recv_one(int sock, void *buf, size_t len, int *fds, int max_fds, int *nfds,
			pid_t *pid)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * MAX_FDS) + CMSG_SPACE(sizeof(struct ucred))];
		struct cmsghdr align;
	} u;
	struct iovec iov = {buf, len};
	struct msghdr msg = {.msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = u.buf,
			     .msg_controllen = sizeof(u.buf)};
	ssize_t n;

	*nfds = 0;
	do
		n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -1;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET)
			continue;
		if (c->cmsg_type == SCM_CREDENTIALS && pid) {
			struct ucred cr;
			memcpy(&cr, CMSG_DATA(c), sizeof(cr));
			*pid = cr.pid;
		}
		if (c->cmsg_type != SCM_RIGHTS)
			continue;
		int count = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		int got[MAX_FDS];
		memcpy(got, CMSG_DATA(c),
		       sizeof(int) * (size_t)(count < MAX_FDS ? count : MAX_FDS));
		for (int i = 0; i < count && i < MAX_FDS; i++) {
			if (fds && *nfds < max_fds)
				fds[(*nfds)++] = got[i];
			else
				close(got[i]); /* nobody asked for it: never leak it */
		}
	}
	if (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
		for (int i = 0; i < *nfds; i++)
			close(fds[i]);
		*nfds = 0;
		errno = EMSGSIZE;
		return -1;
	}
	return n;
}

ssize_t hutch_recv_fds(int sock, void *buf, size_t len, int *fds, int max_fds, int *nfds)
{
	return recv_one(sock, buf, len, fds, max_fds, nfds, NULL);
}

ssize_t hutch_recv_pid(int sock, void *buf, size_t len, pid_t *pid)
{
	int nfds;

	*pid = 0;
	return recv_one(sock, buf, len, NULL, 0, &nfds, pid);
}
