#ifndef HUTCH_UTIL_TIME_H
#define HUTCH_UTIL_TIME_H

#include <stdint.h>

/* Monotonic clock in microseconds. Async-signal-safe. */
uint64_t hutch_now_us(void);

#endif
