/* Whole writes: a loop over write(2) that every caller otherwise repeats. */
#ifndef HUTCH_UTIL_IO_H
#define HUTCH_UTIL_IO_H

#include <stddef.h>

/* Write all len bytes (retrying on EINTR and short writes). 0, or -1 with
 * errno set (EIO when write made no progress). Async-signal-safe. */
int hutch_write_all(int fd, const void *buf, size_t len);

#endif
