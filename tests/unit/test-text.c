/* Unit tests for src/util/text.c: UTF-8 checks, sanitizing, base64. */
#include <stdint.h>

#include "tap.h"
#include "util/text.h"

#define LIT(s) (s), sizeof(s) - 1

static size_t seq_len(const char *s, size_t n)
{
	return hutch_utf8_seq_len((const unsigned char *)s, n);
}

static void test_text_utf8_seq_len_valid(void)
{
	ASSERT_EQ(seq_len(LIT("a")), 1);
	ASSERT_EQ(seq_len("\0", 1), 1);
	ASSERT_EQ(seq_len(LIT("\x7f")), 1);
	ASSERT_EQ(seq_len(LIT("\xc2\x80")), 2);		/* U+0080 */
	ASSERT_EQ(seq_len(LIT("\xc3\xa9")), 2);		/* é */
	ASSERT_EQ(seq_len(LIT("\xdf\xbf")), 2);		/* U+07FF */
	ASSERT_EQ(seq_len(LIT("\xe0\xa0\x80")), 3);	/* U+0800 */
	ASSERT_EQ(seq_len(LIT("\xe2\x82\xac")), 3);	/* € */
	ASSERT_EQ(seq_len(LIT("\xed\x9f\xbf")), 3);	/* U+D7FF */
	ASSERT_EQ(seq_len(LIT("\xee\x80\x80")), 3);	/* U+E000 */
	ASSERT_EQ(seq_len(LIT("\xef\xbf\xbf")), 3);	/* U+FFFF */
	ASSERT_EQ(seq_len(LIT("\xf0\x90\x80\x80")), 4); /* U+10000 */
	ASSERT_EQ(seq_len(LIT("\xf0\x9f\x98\x80")), 4); /* 😀 */
	ASSERT_EQ(seq_len(LIT("\xf4\x8f\xbf\xbf")), 4); /* U+10FFFF */
	/* only the first sequence counts */
	ASSERT_EQ(seq_len(LIT("\xc3\xa9xyz")), 2);
}

static void test_text_utf8_rejects_overlongs(void)
{
	ASSERT_EQ(seq_len(LIT("\xc0\x80")), 0); /* NUL, 2 bytes */
	ASSERT_EQ(seq_len(LIT("\xc0\xaf")), 0); /* '/' */
	ASSERT_EQ(seq_len(LIT("\xc1\xbf")), 0);
	ASSERT_EQ(seq_len(LIT("\xe0\x80\x80")), 0);
	ASSERT_EQ(seq_len(LIT("\xe0\x80\xaf")), 0);
	ASSERT_EQ(seq_len(LIT("\xe0\x9f\xbf")), 0); /* U+07FF in 3 bytes */
	ASSERT_EQ(seq_len(LIT("\xf0\x80\x80\x80")), 0);
	ASSERT_EQ(seq_len(LIT("\xf0\x8f\xbf\xbf")), 0); /* U+FFFF in 4 bytes */
}

static void test_text_utf8_rejects_surrogates(void)
{
	ASSERT_EQ(seq_len(LIT("\xed\xa0\x80")), 0); /* U+D800 */
	ASSERT_EQ(seq_len(LIT("\xed\xad\xbf")), 0); /* U+DB7F */
	ASSERT_EQ(seq_len(LIT("\xed\xb0\x80")), 0); /* U+DC00 */
	ASSERT_EQ(seq_len(LIT("\xed\xbf\xbf")), 0); /* U+DFFF */
	/* a CESU-8 pair for U+1F600 */
	ASSERT(!hutch_utf8_valid(LIT("\xed\xa0\xbd\xed\xb8\x80")));
}

static void test_text_utf8_rejects_above_max(void)
{
	ASSERT_EQ(seq_len(LIT("\xf4\x90\x80\x80")), 0); /* U+110000 */
	ASSERT_EQ(seq_len(LIT("\xf4\xbf\xbf\xbf")), 0);
	ASSERT_EQ(seq_len(LIT("\xf5\x80\x80\x80")), 0);
	ASSERT_EQ(seq_len(LIT("\xf7\xbf\xbf\xbf")), 0);
	ASSERT_EQ(seq_len(LIT("\xf8\x88\x80\x80\x80")), 0); /* old 5-byte form */
	ASSERT_EQ(seq_len(LIT("\xfc\x84\x80\x80\x80\x80")), 0);
	ASSERT_EQ(seq_len(LIT("\xfe")), 0);
	ASSERT_EQ(seq_len(LIT("\xff")), 0);
}

static void test_text_utf8_rejects_truncated(void)
{
	ASSERT_EQ(seq_len(LIT("\xc3")), 0);
	ASSERT_EQ(seq_len(LIT("\xe2\x82")), 0);
	ASSERT_EQ(seq_len(LIT("\xf0\x9f\x98")), 0);
	/* n bounds the read even when more bytes follow */
	ASSERT_EQ(seq_len("\xe2\x82\xac", 2), 0);
	ASSERT_EQ(seq_len("\xf0\x9f\x98\x80", 3), 0);
	/* a continuation byte missing in the middle */
	ASSERT_EQ(seq_len(LIT("\xe2\x41\xac")), 0);
	ASSERT_EQ(seq_len(LIT("\xf0\x9f\xc3\xa9")), 0);
	ASSERT_EQ(seq_len(LIT("\xc3\xc3")), 0);
	/* lone continuation bytes */
	ASSERT_EQ(seq_len(LIT("\x80")), 0);
	ASSERT_EQ(seq_len(LIT("\xbf")), 0);
}

static void test_text_utf8_valid_strings(void)
{
	ASSERT(hutch_utf8_valid("", 0));
	ASSERT(hutch_utf8_valid(NULL, 0));
	ASSERT(hutch_utf8_valid(LIT("plain ascii\n")));
	ASSERT(hutch_utf8_valid(LIT("a\0b")));
	ASSERT(hutch_utf8_valid(LIT("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80")));
	ASSERT(!hutch_utf8_valid(LIT("caf\xc3")));
	ASSERT(!hutch_utf8_valid(LIT("ok\xffok")));
	ASSERT(!hutch_utf8_valid(LIT("\xe2\x82\xac\xe2\x82")));
	/* the length, not a NUL, ends the text */
	ASSERT(hutch_utf8_valid("ok\xff", 2));
}

static void test_text_sanitize_keeps_valid_text(void)
{
	static const char in[] = "caf\xc3\xa9\0\xf0\x9f\x98\x80";
	size_t len = 99;
	char *out = hutch_utf8_sanitize(in, sizeof(in) - 1, &len);

	ASSERT_EQ(len, sizeof(in) - 1);
	ASSERT(memcmp(out, in, len) == 0);
	ASSERT_EQ(out[len], '\0');
	free(out);
	out = hutch_utf8_sanitize("", 0, &len);
	ASSERT(out != NULL);
	ASSERT_EQ(len, 0);
	ASSERT_STREQ(out, "");
	free(out);
}

static void check_sanitize(const char *in, size_t n, const char *want, size_t want_len)
{
	size_t len = 0;
	char *out = hutch_utf8_sanitize(in, n, &len);

	if (len != want_len || memcmp(out, want, len) != 0)
		TAP_FAIL("sanitize gave %zu bytes, want %zu", len, want_len);
	ASSERT(hutch_utf8_valid(out, len));
	ASSERT_EQ(out[len], '\0');
	free(out);
}

#define FFFD "\xef\xbf\xbd"

static void test_text_sanitize_replaces_each_bad_byte(void)
{
	check_sanitize(LIT("a\xff"
			   "b"),
		       LIT("a" FFFD "b"));
	check_sanitize(LIT("\xe2\x82"), LIT(FFFD FFFD));		   /* truncated */
	check_sanitize(LIT("\xed\xa0\x80"), LIT(FFFD FFFD FFFD));	   /* surrogate */
	check_sanitize(LIT("\xc0\xaf"), LIT(FFFD FFFD));		   /* overlong */
	check_sanitize(LIT("\xf4\x90\x80\x80"), LIT(FFFD FFFD FFFD FFFD)); /* > U+10FFFF */
	check_sanitize(LIT("\xe2\x82\xac\xe2\x82"
			   "x"),
		       LIT("\xe2\x82\xac" FFFD FFFD "x"));
	/* a valid sequence right after a bad lead byte is kept */
	check_sanitize(LIT("\xc3\xc3\xa9"), LIT(FFFD "\xc3\xa9"));
	/* U+FFFD itself passes through untouched */
	check_sanitize(LIT(FFFD), LIT(FFFD));
}

static void test_text_base64_encode_rfc4648_vectors(void)
{
	static const char *const vec[][2] = {
		{"", ""},
		{"f", "Zg=="},
		{"fo", "Zm8="},
		{"foo", "Zm9v"},
		{"foob", "Zm9vYg=="},
		{"fooba", "Zm9vYmE="},
		{"foobar", "Zm9vYmFy"},
	};

	for (size_t i = 0; i < sizeof(vec) / sizeof(vec[0]); i++) {
		char *e = hutch_base64_encode(vec[i][0], strlen(vec[i][0]));
		ASSERT_STREQ(e, vec[i][1]);
		free(e);
	}
}

static void test_text_base64_encode_uses_plus_and_slash(void)
{
	char *e = hutch_base64_encode("\xfb\xff\xbf", 3);

	ASSERT_STREQ(e, "+/+/");
	free(e);
	e = hutch_base64_encode("\0\0\0", 3);
	ASSERT_STREQ(e, "AAAA");
	free(e);
}

static void test_text_base64_decode_rfc4648_vectors(void)
{
	static const char *const vec[][2] = {
		{"", ""},
		{"f", "Zg=="},
		{"fo", "Zm8="},
		{"foo", "Zm9v"},
		{"foob", "Zm9vYg=="},
		{"fooba", "Zm9vYmE="},
		{"foobar", "Zm9vYmFy"},
	};

	for (size_t i = 0; i < sizeof(vec) / sizeof(vec[0]); i++) {
		size_t len = 99;
		unsigned char *d = hutch_base64_decode(vec[i][1], strlen(vec[i][1]), &len);
		ASSERT(d != NULL);
		ASSERT_EQ(len, strlen(vec[i][0]));
		ASSERT(memcmp(d, vec[i][0], len) == 0);
		free(d);
	}
}

static void test_text_base64_round_trip(void)
{
	unsigned char data[300];
	uint32_t x = 12345;

	for (size_t i = 0; i < sizeof(data); i++) {
		x = x * 1103515245u + 12345u;
		data[i] = i < 256 ? (unsigned char)i : (unsigned char)(x >> 16);
	}
	for (size_t n = 0; n <= sizeof(data); n++) {
		size_t len = 0;
		char *e = hutch_base64_encode(data, n);
		ASSERT_EQ(strlen(e), (n + 2) / 3 * 4);
		unsigned char *d = hutch_base64_decode(e, strlen(e), &len);
		if (!d || len != n || memcmp(d, data, n) != 0)
			TAP_FAIL("round trip of %zu bytes failed", n);
		free(d);
		free(e);
	}
}

static void check_decode_fails(const char *s, size_t n)
{
	size_t len = 77;
	unsigned char *d = hutch_base64_decode(s, n, &len);

	if (d) {
		free(d);
		TAP_FAIL("'%.*s' (%zu bytes) decoded", (int)n, s, n);
	}
	ASSERT_EQ(len, 77);
}

static void test_text_base64_rejects_bad_length(void)
{
	check_decode_fails(LIT("Z"));
	check_decode_fails(LIT("Zg"));
	check_decode_fails(LIT("Zg="));
	check_decode_fails(LIT("Zm9vY"));
	check_decode_fails(LIT("Zm9vYmFy="));
}

static void test_text_base64_rejects_bad_padding(void)
{
	check_decode_fails(LIT("===="));
	check_decode_fails(LIT("Z==="));
	check_decode_fails(LIT("Zg=a"));
	check_decode_fails(LIT("=Zm9"));
	check_decode_fails(LIT("Zm=v"));
	check_decode_fails(LIT("Zg==Zm9v")); /* padding before the end */
	check_decode_fails(LIT("Zm8=Zm8="));
}

static void test_text_base64_rejects_bad_characters(void)
{
	check_decode_fails(LIT("Zm9-")); /* base64url */
	check_decode_fails(LIT("Zm9_"));
	check_decode_fails(LIT("Zm 9"));       /* whitespace */
	check_decode_fails(LIT("Zm9v\nYmFy")); /* line breaks */
	check_decode_fails(LIT("Zm9v\r\n"));
	check_decode_fails("Zm\0v", 4); /* NUL */
	check_decode_fails(LIT("Zm9\xff"));
	check_decode_fails(LIT("Zm9."));
}

static const struct tap_case cases[] = {
	TAP_CASE(test_text_utf8_seq_len_valid),
	TAP_CASE(test_text_utf8_rejects_overlongs),
	TAP_CASE(test_text_utf8_rejects_surrogates),
	TAP_CASE(test_text_utf8_rejects_above_max),
	TAP_CASE(test_text_utf8_rejects_truncated),
	TAP_CASE(test_text_utf8_valid_strings),
	TAP_CASE(test_text_sanitize_keeps_valid_text),
	TAP_CASE(test_text_sanitize_replaces_each_bad_byte),
	TAP_CASE(test_text_base64_encode_rfc4648_vectors),
	TAP_CASE(test_text_base64_encode_uses_plus_and_slash),
	TAP_CASE(test_text_base64_decode_rfc4648_vectors),
	TAP_CASE(test_text_base64_round_trip),
	TAP_CASE(test_text_base64_rejects_bad_length),
	TAP_CASE(test_text_base64_rejects_bad_padding),
	TAP_CASE(test_text_base64_rejects_bad_characters),
	TAP_END,
};

TAP_MAIN(cases)
