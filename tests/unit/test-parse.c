/* Unit tests for src/util/parse.c: sizes, durations and counts. */
#include <errno.h>
#include <stdint.h>

#include "tap.h"
#include "util/parse.h"

#define SENTINEL 0x5a5a5a5aull

typedef int (*parse_fn)(const char *, uint64_t *, struct hutch_err *);

static uint64_t parse_ok(parse_fn fn, const char *s)
{
	struct hutch_err err = {0};
	uint64_t v = SENTINEL;

	if (fn(s, &v, &err) != 0)
		TAP_FAIL("'%s' rejected: %s", s, err.msg);
	return v;
}

/* fails with `code`, leaves *out alone and names the input in the message */
static void parse_fails(parse_fn fn, const char *s, int code)
{
	struct hutch_err err = {0};
	uint64_t v = SENTINEL;

	if (fn(s, &v, &err) != -1)
		TAP_FAIL("'%s' accepted as %llu", s ? s : "(null)", (unsigned long long)v);
	if (err.code != code)
		TAP_FAIL("'%s': code %d (%s), want %d", s ? s : "(null)", err.code, err.msg, code);
	ASSERT_EQ(v, SENTINEL);
	if (s && *s && strlen(s) < 100)
		ASSERT_CONTAINS(err.msg, s);
}

static void test_parse_size_plain_bytes(void)
{
	ASSERT_EQ(parse_ok(hutch_parse_size, "0"), 0);
	ASSERT_EQ(parse_ok(hutch_parse_size, "512"), 512);
	ASSERT_EQ(parse_ok(hutch_parse_size, "007"), 7);
	ASSERT_EQ(parse_ok(hutch_parse_size, "4096B"), 4096);
}

static void test_parse_size_suffixes(void)
{
	ASSERT_EQ(parse_ok(hutch_parse_size, "64K"), 64ull << 10);
	ASSERT_EQ(parse_ok(hutch_parse_size, "256M"), 256ull << 20);
	ASSERT_EQ(parse_ok(hutch_parse_size, "1G"), 1ull << 30);
	ASSERT_EQ(parse_ok(hutch_parse_size, "2T"), 2ull << 40);
	ASSERT_EQ(parse_ok(hutch_parse_size, "1k"), 1024);
	ASSERT_EQ(parse_ok(hutch_parse_size, "3m"), 3ull << 20);
	ASSERT_EQ(parse_ok(hutch_parse_size, "1KB"), 1024);
	ASSERT_EQ(parse_ok(hutch_parse_size, "1KiB"), 1024);
	ASSERT_EQ(parse_ok(hutch_parse_size, "1mib"), 1ull << 20);
}

static void test_parse_size_fractions(void)
{
	ASSERT_EQ(parse_ok(hutch_parse_size, "1.5K"), 1536);
	ASSERT_EQ(parse_ok(hutch_parse_size, "0.5G"), 512ull << 20);
	ASSERT_EQ(parse_ok(hutch_parse_size, "1.5"), 1); /* whole bytes only */
}

static void test_parse_size_rejects_malformed(void)
{
	parse_fails(hutch_parse_size, NULL, EINVAL);
	parse_fails(hutch_parse_size, "", EINVAL);
	parse_fails(hutch_parse_size, "-1", EINVAL);
	parse_fails(hutch_parse_size, "+1", EINVAL);
	parse_fails(hutch_parse_size, " 1", EINVAL);
	parse_fails(hutch_parse_size, "1 ", EINVAL);
	parse_fails(hutch_parse_size, "1 K", EINVAL);
	parse_fails(hutch_parse_size, ".5K", EINVAL);
	parse_fails(hutch_parse_size, "0x10", EINVAL);
	parse_fails(hutch_parse_size, "0x", EINVAL);
	parse_fails(hutch_parse_size, "12Q", EINVAL);
	parse_fails(hutch_parse_size, "1KK", EINVAL);
	parse_fails(hutch_parse_size, "1Kb2", EINVAL);
	parse_fails(hutch_parse_size, "1P", EINVAL);
	parse_fails(hutch_parse_size, "K", EINVAL);
	parse_fails(hutch_parse_size, "inf", EINVAL);
	parse_fails(hutch_parse_size, "nan", EINVAL);
}

static void test_parse_size_rejects_exponents(void)
{
	parse_fails(hutch_parse_size, "1e3", EINVAL);
	parse_fails(hutch_parse_size, "1E3", EINVAL);
	parse_fails(hutch_parse_size, "1e3K", EINVAL);
	parse_fails(hutch_parse_size, "2.5e2M", EINVAL);
	parse_fails(hutch_parse_size, "1e400", EINVAL);
	parse_fails(hutch_parse_size, "1e", EINVAL);
}

static void test_parse_size_overflow(void)
{
	ASSERT_EQ(parse_ok(hutch_parse_size, "16777215T"), (16777215ull << 40));
	parse_fails(hutch_parse_size, "16777216T", ERANGE); /* 2^64 */
	parse_fails(hutch_parse_size, "17179869184G", ERANGE);
	parse_fails(hutch_parse_size, "18446744073709551616", ERANGE);
	parse_fails(hutch_parse_size, "99999999999999999999999999", ERANGE);
	/* more digits than a double's exponent can hold */
	char big[400];
	memset(big, '9', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	parse_fails(hutch_parse_size, big, ERANGE);
}

static void test_parse_duration_units(void)
{
	ASSERT_EQ(parse_ok(hutch_parse_duration_ms, "30"), 30000);
	ASSERT_EQ(parse_ok(hutch_parse_duration_ms, "0"), 0);
	ASSERT_EQ(parse_ok(hutch_parse_duration_ms, "1.5s"), 1500);
	ASSERT_EQ(parse_ok(hutch_parse_duration_ms, "250ms"), 250);
	ASSERT_EQ(parse_ok(hutch_parse_duration_ms, "2m"), 120000);
	ASSERT_EQ(parse_ok(hutch_parse_duration_ms, "1h"), 3600000);
	ASSERT_EQ(parse_ok(hutch_parse_duration_ms, "0.25m"), 15000);
	ASSERT_EQ(parse_ok(hutch_parse_duration_ms, "0.5ms"), 0);
}

static void test_parse_duration_rejects_malformed(void)
{
	parse_fails(hutch_parse_duration_ms, NULL, EINVAL);
	parse_fails(hutch_parse_duration_ms, "", EINVAL);
	parse_fails(hutch_parse_duration_ms, "-1", EINVAL);
	parse_fails(hutch_parse_duration_ms, "-1s", EINVAL);
	parse_fails(hutch_parse_duration_ms, " 1", EINVAL);
	parse_fails(hutch_parse_duration_ms, "1 s", EINVAL);
	parse_fails(hutch_parse_duration_ms, "0x10", EINVAL);
	parse_fails(hutch_parse_duration_ms, "1e3", EINVAL);
	parse_fails(hutch_parse_duration_ms, "1e3ms", EINVAL);
	parse_fails(hutch_parse_duration_ms, "12Q", EINVAL);
	parse_fails(hutch_parse_duration_ms, "1sec", EINVAL);
	parse_fails(hutch_parse_duration_ms, "1S", EINVAL);
	parse_fails(hutch_parse_duration_ms, "1.5.5s", EINVAL);
	parse_fails(hutch_parse_duration_ms, "s", EINVAL);
}

static void test_parse_duration_overflow(void)
{
	parse_fails(hutch_parse_duration_ms, "99999999999999999999h", ERANGE);
	parse_fails(hutch_parse_duration_ms, "1000000000000001ms", ERANGE);
	ASSERT_EQ(parse_ok(hutch_parse_duration_ms, "1000000000000000ms"), 1000000000000000ull);
}

static void test_parse_count_plain(void)
{
	ASSERT_EQ(parse_ok(hutch_parse_count, "0"), 0);
	ASSERT_EQ(parse_ok(hutch_parse_count, "128"), 128);
	ASSERT_EQ(parse_ok(hutch_parse_count, "010"), 10); /* decimal, not octal */
	ASSERT(parse_ok(hutch_parse_count, "18446744073709551615") == UINT64_MAX);
}

static void test_parse_count_rejects(void)
{
	parse_fails(hutch_parse_count, NULL, EINVAL);
	parse_fails(hutch_parse_count, "", EINVAL);
	parse_fails(hutch_parse_count, "-1", EINVAL);
	parse_fails(hutch_parse_count, " 1", EINVAL);
	parse_fails(hutch_parse_count, "1 ", EINVAL);
	parse_fails(hutch_parse_count, "0x10", EINVAL);
	parse_fails(hutch_parse_count, "1e3", EINVAL);
	parse_fails(hutch_parse_count, "1.5", EINVAL);
	parse_fails(hutch_parse_count, "1K", EINVAL);
	parse_fails(hutch_parse_count, "12Q", EINVAL);
	parse_fails(hutch_parse_count, "18446744073709551616", ERANGE);
}

static void test_parse_err_may_be_null(void)
{
	uint64_t v = SENTINEL;

	ASSERT_EQ(hutch_parse_size("12Q", &v, NULL), -1);
	ASSERT_EQ(hutch_parse_duration_ms("x", &v, NULL), -1);
	ASSERT_EQ(hutch_parse_count("-1", &v, NULL), -1);
	ASSERT_EQ(v, SENTINEL);
}

static const struct tap_case cases[] = {
	TAP_CASE(test_parse_size_plain_bytes),
	TAP_CASE(test_parse_size_suffixes),
	TAP_CASE(test_parse_size_fractions),
	TAP_CASE(test_parse_size_rejects_malformed),
	TAP_CASE(test_parse_size_rejects_exponents),
	TAP_CASE(test_parse_size_overflow),
	TAP_CASE(test_parse_duration_units),
	TAP_CASE(test_parse_duration_rejects_malformed),
	TAP_CASE(test_parse_duration_overflow),
	TAP_CASE(test_parse_count_plain),
	TAP_CASE(test_parse_count_rejects),
	TAP_CASE(test_parse_err_may_be_null),
	TAP_END,
};

TAP_MAIN(cases)
