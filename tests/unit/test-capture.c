/* Unit tests for src/run/capture.c: head + tail capture with a byte cap. */
#include <stdint.h>

#include "tap.h"
#include "run/capture.h"
#include "util/buf.h"

/* What the hook saw, stream by stream. */
struct seen {
	struct hutch_buf bytes;
	int stream;
	int calls;
	int bad_calls; /* wrong stream number or an empty chunk */
};

static void on_output(void *ctx, int stream, const char *buf, size_t len)
{
	struct seen *s = ctx;

	if (stream != s->stream || len == 0)
		s->bad_calls++;
	s->calls++;
	hutch_buf_append(&s->bytes, buf, len);
}

/* The expected capture of `data`, built from the rule in capture.h. */
static char *model(const char *data, size_t n, uint64_t limit, size_t *len)
{
	struct hutch_buf b = HUTCH_BUF_INIT;
	size_t head = (size_t)(limit - limit / 2);
	size_t tail = (size_t)(limit / 2);

	if (n <= limit) {
		hutch_buf_append(&b, data, n);
	} else {
		hutch_buf_append(&b, data, head);
		hutch_buf_printf(&b, "\n[hutch: %zu bytes omitted]\n", n - head - tail);
		hutch_buf_append(&b, data + n - tail, tail);
	}
	return hutch_buf_detach(&b, len);
}

static void test_capture_under_limit_keeps_everything(void)
{
	struct hutch_capture c;
	struct hutch_output out;

	hutch_capture_init(&c, 1, 100, NULL);
	hutch_capture_add(&c, "hello ", 6);
	hutch_capture_add(&c, "world\n", 6);
	hutch_capture_finish(&c, &out);
	ASSERT_STREQ(out.data, "hello world\n");
	ASSERT_EQ(out.len, 12);
	ASSERT_EQ(out.total, 12);
	ASSERT(!out.truncated);
	hutch_capture_release(&c);
	free(out.data);
}

static void test_capture_exactly_at_limit_keeps_everything(void)
{
	struct hutch_capture c;
	struct hutch_output out;

	hutch_capture_init(&c, 1, 10, NULL);
	hutch_capture_add(&c, "0123456789", 10);
	hutch_capture_finish(&c, &out);
	ASSERT_STREQ(out.data, "0123456789");
	ASSERT_EQ(out.total, 10);
	ASSERT(!out.truncated);
	hutch_capture_release(&c);
	free(out.data);
}

static void test_capture_over_limit_keeps_head_and_tail(void)
{
	struct hutch_capture c;
	struct hutch_output out;

	hutch_capture_init(&c, 1, 10, NULL);
	hutch_capture_add(&c, "abcdefghijklmnopqrstuvwxyz", 26);
	hutch_capture_finish(&c, &out);
	ASSERT_STREQ(out.data, "abcde\n[hutch: 16 bytes omitted]\nvwxyz");
	ASSERT_EQ(out.len, strlen(out.data));
	ASSERT_EQ(out.total, 26);
	ASSERT(out.truncated);
	ASSERT_EQ(out.head, 5);
	ASSERT_EQ(out.tail, 5);
	hutch_capture_release(&c);
	free(out.data);
}

static void test_capture_odd_limit_gives_head_the_extra_byte(void)
{
	struct hutch_capture c;
	struct hutch_output out;

	hutch_capture_init(&c, 2, 11, NULL);
	hutch_capture_add(&c, "abcdefghijkl", 12);
	hutch_capture_finish(&c, &out);
	ASSERT_STREQ(out.data, "abcdef\n[hutch: 1 bytes omitted]\nhijkl");
	ASSERT_EQ(out.head, 6);
	ASSERT_EQ(out.tail, 5);
	hutch_capture_release(&c);
	free(out.data);
}

static void test_capture_limit_one_keeps_only_head(void)
{
	struct hutch_capture c;
	struct hutch_output out;

	hutch_capture_init(&c, 1, 1, NULL);
	hutch_capture_add(&c, "ab", 2);
	hutch_capture_add(&c, "cde", 3);
	hutch_capture_finish(&c, &out);
	ASSERT_STREQ(out.data, "a\n[hutch: 4 bytes omitted]\n");
	ASSERT_EQ(out.head, 1);
	ASSERT_EQ(out.tail, 0);
	hutch_capture_release(&c);
	free(out.data);
}

static void test_capture_nothing_written(void)
{
	struct hutch_capture c;
	struct hutch_output out;

	hutch_capture_init(&c, 1, 1 << 20, NULL);
	hutch_capture_add(&c, "", 0);
	hutch_capture_finish(&c, &out);
	ASSERT(out.data != NULL);
	ASSERT_STREQ(out.data, "");
	ASSERT_EQ(out.len, 0);
	ASSERT_EQ(out.total, 0);
	ASSERT(!out.truncated);
	hutch_capture_release(&c);
	free(out.data);
}

static void test_capture_keeps_binary_bytes(void)
{
	struct hutch_capture c;
	struct hutch_output out;
	static const char bin[] = "\0\xff\0\n\x80";

	hutch_capture_init(&c, 1, 64, NULL);
	hutch_capture_add(&c, bin, 5);
	hutch_capture_finish(&c, &out);
	ASSERT_EQ(out.len, 5);
	ASSERT(memcmp(out.data, bin, 5) == 0);
	ASSERT_EQ(out.data[5], '\0');
	hutch_capture_release(&c);
	free(out.data);
}

static void test_capture_hook_sees_head_as_it_arrives(void)
{
	struct seen s = {HUTCH_BUF_INIT, 2, 0, 0};
	struct hutch_run_hooks hooks = {on_output, &s};
	struct hutch_capture c;
	struct hutch_output out;

	hutch_capture_init(&c, 2, 10, &hooks);
	hutch_capture_add(&c, "abc", 3);
	ASSERT_EQ(s.bytes.len, 3);
	hutch_capture_add(&c, "defghijklmnopqrstuvwxyz", 23);
	/* only the head is certain before the end */
	ASSERT_EQ(s.bytes.len, 5);
	ASSERT(memcmp(s.bytes.data, "abcde", 5) == 0);
	hutch_capture_finish(&c, &out);
	ASSERT_EQ(s.bytes.len, out.len);
	ASSERT(memcmp(s.bytes.data, out.data, out.len) == 0);
	ASSERT_EQ(s.bad_calls, 0);
	hutch_capture_release(&c);
	hutch_buf_release(&s.bytes);
	free(out.data);
}

static void test_capture_hook_without_callback_is_ignored(void)
{
	struct hutch_run_hooks hooks = {NULL, NULL};
	struct hutch_capture c;
	struct hutch_output out;

	hutch_capture_init(&c, 1, 4, &hooks);
	hutch_capture_add(&c, "abcdef", 6);
	hutch_capture_finish(&c, &out);
	ASSERT_STREQ(out.data, "ab\n[hutch: 2 bytes omitted]\nef");
	hutch_capture_release(&c);
	free(out.data);
}

/* Feed `data` in chunks of the given sizes (cycled); check the result and
 * the hook's bytes against the model. */
static void check_chunked(const char *data, size_t n, uint64_t limit, const size_t *chunks,
			  size_t nchunks)
{
	struct seen s = {HUTCH_BUF_INIT, 1, 0, 0};
	struct hutch_run_hooks hooks = {on_output, &s};
	struct hutch_capture c;
	struct hutch_output out;
	size_t want_len;
	char *want = model(data, n, limit, &want_len);

	hutch_capture_init(&c, 1, limit, &hooks);
	for (size_t off = 0, k = 0; off < n; k++) {
		size_t len = chunks[k % nchunks];
		if (len > n - off)
			len = n - off;
		hutch_capture_add(&c, data + off, len);
		off += len;
	}
	hutch_capture_finish(&c, &out);
	if (out.len != want_len || memcmp(out.data, want, want_len) != 0)
		TAP_FAIL("limit %llu, %zu bytes in chunks of %zu...: got %zu bytes, want %zu",
			 (unsigned long long)limit, n, chunks[0], out.len, want_len);
	if (s.bytes.len != out.len || (out.len && memcmp(s.bytes.data, out.data, out.len) != 0))
		TAP_FAIL("limit %llu, %zu bytes: the hook saw %zu bytes, the result has %zu",
			 (unsigned long long)limit, n, s.bytes.len, out.len);
	ASSERT_EQ(s.bad_calls, 0);
	ASSERT_EQ(out.total, n);
	ASSERT_EQ(out.truncated, n > limit);
	if (out.truncated) {
		ASSERT_EQ(out.head, limit - limit / 2);
		ASSERT_EQ(out.tail, limit / 2);
	}
	hutch_capture_release(&c);
	hutch_buf_release(&s.bytes);
	free(out.data);
	free(want);
}

static void test_capture_small_writes_equal_one_big_write(void)
{
	static const uint64_t limits[] = {1, 2, 3, 4, 7, 10, 64, 100, 1000};
	static const size_t one[] = {1};
	static const size_t mixed[] = {3, 1, 7, 2, 64, 5};
	static const size_t big[] = {1 << 20};
	char data[3100];
	uint32_t x = 1;

	for (size_t i = 0; i < sizeof(data); i++) {
		x = x * 1103515245u + 12345u;
		data[i] = (char)(x >> 24);
	}
	for (size_t l = 0; l < sizeof(limits) / sizeof(limits[0]); l++) {
		uint64_t limit = limits[l];
		size_t sizes[] = {0,	     1,		limit / 2, limit - 1,	  limit,
				  limit + 1, 2 * limit, 3 * limit, 3 * limit + 1, 3000};
		for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
			size_t n = sizes[k] > sizeof(data) ? sizeof(data) : sizes[k];
			check_chunked(data, n, limit, one, 1);
			check_chunked(data, n, limit, mixed, 6);
			check_chunked(data, n, limit, big, 1);
		}
	}
}

static void test_capture_chunk_larger_than_ring_then_wrap(void)
{
	static const size_t chunks[] = {9, 1000, 3, 3, 3, 3, 700, 1};

	for (size_t n = 1000; n < 3000; n += 97)
		for (uint64_t limit = 10; limit < 40; limit += 3) {
			char data[3000];
			for (size_t i = 0; i < n; i++)
				data[i] = (char)('a' + i % 26);
			check_chunked(data, n, limit, chunks, 8);
		}
}

static void test_capture_omitted_count_is_exact_for_large_output(void)
{
	struct hutch_capture c;
	struct hutch_output out;
	char block[4096];

	memset(block, 'x', sizeof(block));
	hutch_capture_init(&c, 1, 1 << 10, NULL);
	for (int i = 0; i < 1024; i++) /* 4 MiB */
		hutch_capture_add(&c, block, sizeof(block));
	hutch_capture_finish(&c, &out);
	ASSERT_EQ(out.total, 4u << 20);
	ASSERT_CONTAINS(out.data, "[hutch: 4193280 bytes omitted]");
	ASSERT_EQ(out.len, 1024 + strlen("\n[hutch: 4193280 bytes omitted]\n"));
	hutch_capture_release(&c);
	free(out.data);
}

static const struct tap_case cases[] = {
	TAP_CASE(test_capture_under_limit_keeps_everything),
	TAP_CASE(test_capture_exactly_at_limit_keeps_everything),
	TAP_CASE(test_capture_over_limit_keeps_head_and_tail),
	TAP_CASE(test_capture_odd_limit_gives_head_the_extra_byte),
	TAP_CASE(test_capture_limit_one_keeps_only_head),
	TAP_CASE(test_capture_nothing_written),
	TAP_CASE(test_capture_keeps_binary_bytes),
	TAP_CASE(test_capture_hook_sees_head_as_it_arrives),
	TAP_CASE(test_capture_hook_without_callback_is_ignored),
	TAP_CASE(test_capture_small_writes_equal_one_big_write),
	TAP_CASE(test_capture_chunk_larger_than_ring_then_wrap),
	TAP_CASE(test_capture_omitted_count_is_exact_for_large_output),
	TAP_END,
};

TAP_MAIN(cases)
