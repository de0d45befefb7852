#ifndef HUTCH_UTIL_ID_H
#define HUTCH_UTIL_ID_H

#include <stddef.h>

/* Write "<prefix>_<16 hex digits from getrandom>" into out (NUL-terminated). */
void hutch_id_new(char *out, size_t size, const char *prefix);

#endif
