#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cell/cell.h"
#include "util/err.h"

/* Network policy "none": the cell has its own, empty network namespace
 * (CLONE_NEWNET) in which only loopback exists; bring it up so programs can
 * talk to themselves (test servers, multiprocessing managers). Nothing in
 * this namespace routes anywhere else. Child-only. */
int hutch_net_loopback_up(struct hutch_err *err)
{
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return hutch_err_set(err, errno, "socket for loopback");
	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, "lo");
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0) {
		hutch_err_set(err, errno, "get flags of 'lo'");
		close(fd);
		return -1;
	}
	ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
	if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0) {
		hutch_err_set(err, errno, "bring up 'lo'");
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/* Network policy allow: the sandbox's only way out is hutch's proxy. Its
 * listening socket lives in the cell's namespace, on loopback: the program
 * reaches it at 127.0.0.1:HUTCH_PROXY_PORT, the supervisor accepts on it
 * from outside, and no veth or route is needed. Child-only. */
int hutch_net_proxy_listen(struct hutch_err *err)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(HUTCH_PROXY_PORT)};
	int one = 1;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return hutch_err_set(err, errno, "proxy socket");
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 128) < 0) {
		hutch_err_set(err, errno, "proxy listen on 127.0.0.1:%d", HUTCH_PROXY_PORT);
		close(fd);
		return -1;
	}
	return fd;
}
