/* The connect watch: the supervisor's end of the seccomp filter that hands
 * every connect() and addressed sendto() of a cell to it (seccomp_unotify(2)).
 * The network namespace and its routes enforce the policy; the watch sees
 * what the program tried, so the result can say so, and answers at once
 * instead of letting a blocked destination time out. */
#ifndef HUTCH_CELL_CONNWATCH_H
#define HUTCH_CELL_CONNWATCH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

struct hutch_connwatch_event {
	uint64_t id; /* the notification's cookie */
	pid_t pid;   /* the caller, in the supervisor's pid namespace */
	int fd;	     /* the caller's socket, in the caller */
	bool is_ip;  /* addr holds an AF_INET or AF_INET6 destination */
	bool sendto; /* a datagram with an address rather than a connect */
	struct sockaddr_storage addr;
};

/* Take one notification. 1: *ev filled (answer it with
 * hutch_connwatch_reply); 0: nothing to do (the caller went away, or no
 * notification was pending on a non-blocking poll); -1: the filter is gone
 * (every process of the cell has exited). */
int hutch_connwatch_recv(int listener, struct hutch_connwatch_event *ev);

/* Answer: error 0 lets the call proceed (the kernel then checks it against
 * the namespace and routes as usual); otherwise it fails with -error. */
void hutch_connwatch_reply(int listener, const struct hutch_connwatch_event *ev, int error);

/* SOCK_STREAM, SOCK_DGRAM..., or 0 when the socket cannot be looked at. */
int hutch_connwatch_socktype(const struct hutch_connwatch_event *ev);

#endif
