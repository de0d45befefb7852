/* Text encodings used by the JSON forms: UTF-8 checking and base64. Pure. */
#ifndef HUTCH_UTIL_TEXT_H
#define HUTCH_UTIL_TEXT_H

#include <stdbool.h>
#include <stddef.h>

/* Length of the valid UTF-8 sequence at s (1-4), or 0 if invalid. Rejects
 * overlong forms, surrogates and code points above U+10FFFF (RFC 3629). */
size_t hutch_utf8_seq_len(const unsigned char *s, size_t n);
bool hutch_utf8_valid(const char *s, size_t n);
/* Copy with every invalid byte replaced by U+FFFD. Caller frees. */
char *hutch_utf8_sanitize(const char *s, size_t n, size_t *out_len);

/* Standard base64 with padding. Caller frees; NUL-terminated. */
char *hutch_base64_encode(const void *data, size_t n);
/* Decode standard base64 (padding required, no whitespace). Returns NULL on
 * malformed input. Caller frees; *out_len set. */
unsigned char *hutch_base64_decode(const char *s, size_t n, size_t *out_len);

#endif
