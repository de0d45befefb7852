/* Frames on the daemon's socket (docs/daemon.md): u32 LE length (type byte
 * + payload), one type byte, the payload. */
#ifndef HUTCH_API_FRAME_H
#define HUTCH_API_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "hutch.h"

#define HUTCH_FRAME_MAX (128u << 20)

/* Write one frame. 0, or -1 with errno (EPIPE when the peer is gone). */
int hutch_frame_write(int fd, char type, const void *payload, size_t len);
/* Read one frame; *payload is malloc'd and NUL-terminated (caller frees).
 * Returns 1 for a frame, 0 at a clean EOF, -1 on error (err: EMSGSIZE for
 * a frame over HUTCH_FRAME_MAX, EPROTO for a truncated one). */
int hutch_frame_read(int fd, char *type, char **payload, size_t *len, struct hutch_err *err);

#endif
