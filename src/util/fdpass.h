/* One message with file descriptors over a unix socket (SCM_RIGHTS). */
#ifndef HUTCH_UTIL_FDPASS_H
#define HUTCH_UTIL_FDPASS_H

#include <stddef.h>
#include <sys/types.h>

/* Send len bytes and nfds fds in one message. Returns 0 or -1 (errno). */
int hutch_send_fds(int sock, const void *buf, size_t len, const int *fds, int nfds);
/* Receive one message: up to len bytes and up to max_fds fds (received fds
 * are close-on-exec; surplus ones are closed). Returns the byte count (0 at
 * EOF) and sets *nfds, or -1 (errno). */
ssize_t hutch_recv_fds(int sock, void *buf, size_t len, int *fds, int max_fds, int *nfds);

/* Receive one message on a socket with SO_PASSCRED set, and the sender's pid
 * as the kernel translated it into our pid namespace (*pid 0 if none). */
ssize_t hutch_recv_pid(int sock, void *buf, size_t len, pid_t *pid);

#endif
