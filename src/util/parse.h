/* Parsers for human-written values (CLI options, config). Pure, no I/O. */
#ifndef HUTCH_UTIL_PARSE_H
#define HUTCH_UTIL_PARSE_H

#include <stdbool.h>
#include <stdint.h>

#include "hutch.h"

/* "512", "64K", "256M", "1G", "2T" (binary units; an optional trailing "B"
 * or "iB" is accepted). Fails with EINVAL or ERANGE. */
int hutch_parse_size(const char *s, uint64_t *out, struct hutch_err *err);

/* "30" (seconds), "1.5s", "250ms", "2m", "1h" -> milliseconds. */
int hutch_parse_duration_ms(const char *s, uint64_t *out, struct hutch_err *err);

/* A decimal count without sign or suffix. */
int hutch_parse_count(const char *s, uint64_t *out, struct hutch_err *err);

#endif
