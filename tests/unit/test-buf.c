/* Unit tests for src/util/buf.c: the growable buffer and its NUL invariant. */
#include "tap.h"
#include "util/buf.h"

static void test_buf_detach_empty_is_terminated(void)
{
	struct hutch_buf b = HUTCH_BUF_INIT;
	size_t len = 99;
	char *dirty = malloc(64);
	char *p;

	/* leave a dirty chunk of the size detach allocates for malloc to reuse */
	ASSERT(dirty != NULL);
	memset(dirty, 'x', 64);
	free(dirty);
	p = hutch_buf_detach(&b, &len);

	ASSERT(p != NULL);
	ASSERT_EQ(len, 0);
	ASSERT_STREQ(p, "");
	ASSERT(b.data == NULL);
	free(p);
}

static void test_buf_append_keeps_binary_and_nul(void)
{
	struct hutch_buf b = HUTCH_BUF_INIT;

	hutch_buf_append(&b, "a\0b", 3);
	hutch_buf_append(&b, "", 0);
	ASSERT_EQ(b.len, 3);
	ASSERT(memcmp(b.data, "a\0b", 4) == 0);
	for (int i = 0; i < 1000; i++)
		hutch_buf_puts(&b, "xyz");
	ASSERT_EQ(b.len, 3003);
	ASSERT_EQ(b.data[b.len], '\0');
	ASSERT(b.cap > b.len);
	hutch_buf_release(&b);
	ASSERT(b.data == NULL);
	ASSERT_EQ(b.len, 0);
}

static void test_buf_printf_appends(void)
{
	struct hutch_buf b = HUTCH_BUF_INIT;
	size_t len = 0;
	char *p;

	hutch_buf_puts(&b, "n=");
	hutch_buf_printf(&b, "%d/%s", 42, "x");
	hutch_buf_printf(&b, "%s", "");
	p = hutch_buf_detach(&b, &len);
	ASSERT_STREQ(p, "n=42/x");
	ASSERT_EQ(len, 6);
	free(p);
}

static const struct tap_case cases[] = {
	TAP_CASE(test_buf_detach_empty_is_terminated),
	TAP_CASE(test_buf_append_keeps_binary_and_nul),
	TAP_CASE(test_buf_printf_appends),
	TAP_END,
};

TAP_MAIN(cases)
