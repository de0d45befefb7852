#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
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

/* Network policy full: the cell reaches out through slirp4netns
 * (cell/slirp.c), which makes every connection from the host as the user
 * who runs hutch. What must stay out of reach (private ranges, metadata, the
 * host's own addresses) gets an "unreachable" route here, in the cell's own
 * routing table, which the program cannot change (it has no
 * CAP_NET_ADMIN): connect() and sendto() to them fail at once, for every
 * protocol, with no race between a check and the call. Child-only. */
static int add_unreachable(int nl, const struct hutch_net_block *b, unsigned seq)
{
	struct {
		struct nlmsghdr nh;
		struct rtmsg rt;
		char attrs[64];
	} req;
	struct rtattr *rta;
	size_t alen = b->family == AF_INET ? 4 : 16;
	struct {
		struct nlmsghdr nh;
		struct nlmsgerr e;
	} ack;

	memset(&req, 0, sizeof(req));
	req.nh.nlmsg_type = RTM_NEWROUTE;
	req.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_REPLACE | NLM_F_ACK;
	req.nh.nlmsg_seq = seq;
	req.rt.rtm_family = (unsigned char)b->family;
	req.rt.rtm_dst_len = b->prefix;
	req.rt.rtm_table = RT_TABLE_MAIN;
	req.rt.rtm_protocol = RTPROT_STATIC;
	req.rt.rtm_scope = RT_SCOPE_NOWHERE;
	req.rt.rtm_type = RTN_UNREACHABLE;
	rta = (struct rtattr *)req.attrs;
	rta->rta_type = RTA_DST;
	rta->rta_len = (unsigned short)RTA_LENGTH(alen);
	memcpy(RTA_DATA(rta), b->addr, alen);
	req.nh.nlmsg_len = NLMSG_LENGTH(sizeof(struct rtmsg)) + RTA_ALIGN(rta->rta_len);
	if (send(nl, &req, req.nh.nlmsg_len, 0) < 0)
		return -errno;
	ssize_t n = recv(nl, &ack, sizeof(ack), 0);
	if (n < (ssize_t)sizeof(ack) || ack.nh.nlmsg_type != NLMSG_ERROR)
		return -EPROTO;
	return ack.e.error; /* 0 or -errno */
}

int hutch_net_block(const struct hutch_net_block *blocks, size_t n, struct hutch_err *err)
{
	int nl = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);

	if (nl < 0)
		return hutch_err_set(err, errno, "netlink socket");
	for (size_t i = 0; i < n; i++) {
		int rc = add_unreachable(nl, &blocks[i], (unsigned)i + 1);
		if (rc < 0) {
			close(nl);
			return hutch_err_set(err, -rc, "unreachable route %zu of %zu", i + 1, n);
		}
	}
	close(nl);
	return 0;
}
