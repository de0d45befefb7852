#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/mem.h"
#include "util/text.h"

size_t hutch_utf8_seq_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	size_t len;
	uint32_t cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10ffff ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

bool hutch_utf8_valid(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;

	for (size_t i = 0; i < n;) {
		size_t len = hutch_utf8_seq_len(p + i, n - i);
		if (!len)
			return false;
		i += len;
	}
	return true;
}

char *hutch_utf8_sanitize(const char *s, size_t n, size_t *out_len)
{
	const unsigned char *p = (const unsigned char *)s;
	struct hutch_buf b = HUTCH_BUF_INIT;

	for (size_t i = 0; i < n;) {
		size_t len = hutch_utf8_seq_len(p + i, n - i);
		if (len) {
			hutch_buf_append(&b, p + i, len);
			i += len;
		} else {
			hutch_buf_append(&b, "\xef\xbf\xbd", 3);
			i++;
		}
	}
	return hutch_buf_detach(&b, out_len);
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *hutch_base64_encode(const void *data, size_t n)
{
	const unsigned char *p = data;
	char *out = hutch_xmalloc((n + 2) / 3 * 4 + 1);
	size_t o = 0;
	size_t i = 0;

	for (; i + 2 < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
		out[o++] = b64[v >> 18];
		out[o++] = b64[(v >> 12) & 63];
		out[o++] = b64[(v >> 6) & 63];
		out[o++] = b64[v & 63];
	}
	if (i < n) {
		uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0);
		out[o++] = b64[v >> 18];
		out[o++] = b64[(v >> 12) & 63];
		out[o++] = '=';
		if (i + 1 < n)
			out[o - 1] = b64[(v >> 6) & 63];
		out[o++] = '=';
	}
	out[o] = '\0';
	return out;
}

static int b64_value(unsigned char c)
{
	for (int i = 0; i < 64; i++)
		if (b64[i] == (char)c)
			return i;
	return -1;
}

unsigned char *hutch_base64_decode(const char *s, size_t n, size_t *out_len)
{
	unsigned char *out;
	size_t o = 0;

	if (n % 4 != 0)
		return NULL;
	out = hutch_xmalloc(n / 4 * 3 + 1);
	for (size_t i = 0; i < n; i += 4) {
		int v[4];
		int pad = 0;
		for (int k = 0; k < 4; k++) {
			unsigned char c = (unsigned char)s[i + k];
			/* '=' only as the last one or two characters of the input */
			if (c == '=' && i + 4 == n && (k == 3 || (k == 2 && s[i + 3] == '='))) {
				v[k] = 0;
				pad++;
				continue;
			}
			v[k] = b64_value(c);
			if (v[k] < 0 || pad) {
				free(out);
				return NULL;
			}
		}
		uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 |
			     (uint32_t)v[3];
		out[o++] = (unsigned char)(w >> 16);
		if (pad < 2)
			out[o++] = (unsigned char)(w >> 8);
		if (pad < 1)
			out[o++] = (unsigned char)w;
	}
	*out_len = o;
	return out;
}
