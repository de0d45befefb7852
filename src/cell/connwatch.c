#include <errno.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "cell/connwatch.h"

/*
 * seccomp_unotify(2): the listener delivers one struct seccomp_notif per
 * trapped call; the caller sleeps until it is answered. The destination is
 * read from the caller's memory, then the cookie is checked again: if the
 * caller died in between, its pid may be someone else's and the bytes mean
 * nothing. A multi-threaded caller can still change the address after it
 * was read; that is why nothing here enforces anything (the namespace does)
 * and a continued call is only logged.
 */

int hutch_connwatch_recv(int listener, struct hutch_connwatch_event *ev)
{
	struct seccomp_notif req;
	struct iovec local;
	struct iovec remote;
	uint64_t ptr;
	uint64_t len;

	memset(&req, 0, sizeof(req)); /* the kernel insists */
	memset(ev, 0, sizeof(*ev));
	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0) {
		/* ENOENT: the caller was interrupted before we took it */
		return errno == ENOENT || errno == EINTR || errno == EAGAIN ? 0 : -1;
	}
	ev->id = req.id;
	ev->pid = (pid_t)req.pid;
	ev->fd = (int)req.data.args[0];
	ev->sendto = req.data.nr == SYS_sendto;
	ptr = ev->sendto ? req.data.args[4] : req.data.args[1];
	len = ev->sendto ? req.data.args[5] : req.data.args[2];
	if (len > sizeof(ev->addr))
		len = sizeof(ev->addr);
	local = (struct iovec){&ev->addr, (size_t)len};
	remote = (struct iovec){(void *)(uintptr_t)ptr, (size_t)len};
	if (len < sizeof(sa_family_t) ||
	    process_vm_readv(ev->pid, &local, 1, &remote, 1, 0) != (ssize_t)len ||
	    ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &ev->id) < 0) {
		ev->addr.ss_family = AF_UNSPEC; /* the kernel will judge it */
		return 1;
	}
	ev->is_ip = (ev->addr.ss_family == AF_INET && len >= sizeof(struct sockaddr_in)) ||
		    (ev->addr.ss_family == AF_INET6 && len >= sizeof(struct sockaddr_in6));
	return 1;
}

void hutch_connwatch_reply(int listener, const struct hutch_connwatch_event *ev, int error)
{
	struct seccomp_notif_resp resp = {.id = ev->id};

	if (error) {
		resp.error = -error;
	} else {
		resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
	}
	/* ENOENT: the caller is gone; nothing to answer */
	(void)ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
}

int hutch_connwatch_socktype(const struct hutch_connwatch_event *ev)
{
	/* ev->pid is the calling thread's id: PIDFD_THREAD (Linux 6.9) takes
	 * any thread, plain pidfd_open only a leader */
	int pidfd = pidfd_open(ev->pid, O_EXCL /* PIDFD_THREAD */);
	if (pidfd < 0)
		pidfd = pidfd_open(ev->pid, 0);
	int type = 0;
	socklen_t tlen = sizeof(type);

	if (pidfd < 0)
		return 0;
	int sock = pidfd_getfd(pidfd, ev->fd, 0);
	close(pidfd);
	if (sock < 0)
		return 0;
	if (getsockopt(sock, SOL_SOCKET, SO_TYPE, &type, &tlen) < 0)
		type = 0;
	close(sock);
	return type;
}
