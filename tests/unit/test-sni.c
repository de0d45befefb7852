/* Unit tests for src/run/sni.c: the SNI host name in a TLS ClientHello.
 *
 * hello_sni and hello_no_sni are real TLS 1.3 ClientHellos, written by
 * Python 3.11's ssl module (OpenSSL 3.0) into a memory BIO:
 *
 *	ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
 *	ctx.minimum_version = ssl.TLSVersion.TLSv1_3
 *	s = ctx.wrap_bio(ssl.MemoryBIO(), out := ssl.MemoryBIO(),
 *			 server_hostname="example.com")   # None for hello_no_sni
 *	s.do_handshake()   # raises SSLWantReadError; out.read() is the hello
 *
 * The same bytes are seeds in fuzz/corpus/sni/. Other cases are built by
 * build_hello() below, field by field. */
#include "tap.h"
#include "run/sni.h"

static const unsigned char hello_sni[] = {
	0x16, 0x03, 0x01, 0x00, 0xf0, 0x01, 0x00, 0x00, 0xec, 0x03, 0x03, 0x1f, 0x98, 0xa7, 0x26,
	0x6b, 0x92, 0xdf, 0xa0, 0x0c, 0xe6, 0xec, 0xb2, 0x57, 0xa4, 0xdf, 0x8b, 0x63, 0xe4, 0x82,
	0x78, 0xe6, 0xa5, 0x07, 0x54, 0x0e, 0xb8, 0x3f, 0x14, 0x94, 0xf6, 0x1f, 0xc9, 0x20, 0xcb,
	0x3f, 0x37, 0x1e, 0xf3, 0xfd, 0x47, 0x74, 0x75, 0x1a, 0x44, 0x56, 0x10, 0xd3, 0x12, 0x7e,
	0xdd, 0x11, 0x3a, 0x14, 0xd2, 0xc9, 0xfa, 0xa0, 0x4f, 0x6b, 0x48, 0x4a, 0x05, 0x93, 0xc9,
	0x61, 0x00, 0x08, 0x13, 0x02, 0x13, 0x03, 0x13, 0x01, 0x00, 0xff, 0x01, 0x00, 0x00, 0x9b,
	0x00, 0x00, 0x00, 0x10, 0x00, 0x0e, 0x00, 0x00, 0x0b, 0x65, 0x78, 0x61, 0x6d, 0x70, 0x6c,
	0x65, 0x2e, 0x63, 0x6f, 0x6d, 0x00, 0x0b, 0x00, 0x04, 0x03, 0x00, 0x01, 0x02, 0x00, 0x0a,
	0x00, 0x16, 0x00, 0x14, 0x00, 0x1d, 0x00, 0x17, 0x00, 0x1e, 0x00, 0x19, 0x00, 0x18, 0x01,
	0x00, 0x01, 0x01, 0x01, 0x02, 0x01, 0x03, 0x01, 0x04, 0x00, 0x23, 0x00, 0x00, 0x00, 0x16,
	0x00, 0x00, 0x00, 0x17, 0x00, 0x00, 0x00, 0x0d, 0x00, 0x1e, 0x00, 0x1c, 0x04, 0x03, 0x05,
	0x03, 0x06, 0x03, 0x08, 0x07, 0x08, 0x08, 0x08, 0x09, 0x08, 0x0a, 0x08, 0x0b, 0x08, 0x04,
	0x08, 0x05, 0x08, 0x06, 0x04, 0x01, 0x05, 0x01, 0x06, 0x01, 0x00, 0x2b, 0x00, 0x03, 0x02,
	0x03, 0x04, 0x00, 0x2d, 0x00, 0x02, 0x01, 0x01, 0x00, 0x33, 0x00, 0x26, 0x00, 0x24, 0x00,
	0x1d, 0x00, 0x20, 0xe8, 0xa5, 0x37, 0xea, 0x69, 0x34, 0x32, 0x47, 0x4f, 0x8d, 0x84, 0x81,
	0xfb, 0x33, 0xb9, 0xcf, 0xf7, 0xa6, 0x37, 0x70, 0x25, 0xd2, 0x88, 0xec, 0x6e, 0xc4, 0x98,
	0xf6, 0xfc, 0xa7, 0x7f, 0x30,
};

static const unsigned char hello_no_sni[] = {
	0x16, 0x03, 0x01, 0x00, 0xdc, 0x01, 0x00, 0x00, 0xd8, 0x03, 0x03, 0x6b, 0x48, 0xab, 0x08,
	0x5f, 0xe8, 0xcf, 0x06, 0xb2, 0x68, 0xd4, 0x1b, 0xfb, 0x09, 0x70, 0x81, 0x10, 0x85, 0x86,
	0x89, 0xed, 0x4b, 0x87, 0x5e, 0x27, 0x34, 0x80, 0xcd, 0xd6, 0x4f, 0x2a, 0x75, 0x20, 0x9d,
	0xab, 0x2a, 0x1b, 0x22, 0xed, 0x23, 0xe3, 0x97, 0x4e, 0x01, 0xdb, 0xcc, 0x6f, 0x7d, 0x9b,
	0x61, 0x12, 0xa7, 0x34, 0xff, 0x1c, 0xe6, 0x24, 0x34, 0x9b, 0xca, 0x3d, 0x54, 0x20, 0x17,
	0x0d, 0x00, 0x08, 0x13, 0x02, 0x13, 0x03, 0x13, 0x01, 0x00, 0xff, 0x01, 0x00, 0x00, 0x87,
	0x00, 0x0b, 0x00, 0x04, 0x03, 0x00, 0x01, 0x02, 0x00, 0x0a, 0x00, 0x16, 0x00, 0x14, 0x00,
	0x1d, 0x00, 0x17, 0x00, 0x1e, 0x00, 0x19, 0x00, 0x18, 0x01, 0x00, 0x01, 0x01, 0x01, 0x02,
	0x01, 0x03, 0x01, 0x04, 0x00, 0x23, 0x00, 0x00, 0x00, 0x16, 0x00, 0x00, 0x00, 0x17, 0x00,
	0x00, 0x00, 0x0d, 0x00, 0x1e, 0x00, 0x1c, 0x04, 0x03, 0x05, 0x03, 0x06, 0x03, 0x08, 0x07,
	0x08, 0x08, 0x08, 0x09, 0x08, 0x0a, 0x08, 0x0b, 0x08, 0x04, 0x08, 0x05, 0x08, 0x06, 0x04,
	0x01, 0x05, 0x01, 0x06, 0x01, 0x00, 0x2b, 0x00, 0x03, 0x02, 0x03, 0x04, 0x00, 0x2d, 0x00,
	0x02, 0x01, 0x01, 0x00, 0x33, 0x00, 0x26, 0x00, 0x24, 0x00, 0x1d, 0x00, 0x20, 0xdb, 0x1f,
	0xa4, 0xdb, 0xac, 0xfd, 0x41, 0x51, 0x00, 0x2a, 0xc7, 0x7a, 0x0a, 0x01, 0x39, 0xc3, 0xe7,
	0x62, 0x4f, 0x0e, 0x66, 0x02, 0xda, 0xcf, 0xea, 0xe1, 0x40, 0x1e, 0xf1, 0x62, 0x5a, 0x79,
};

#define NAME_SIZE 256

/* Offsets inside a record, for the corruption tests. */
#define REC_LEN_OFF 3  /* uint16 record length */
#define HS_LEN_OFF  6  /* uint24 handshake length */
#define SID_LEN_OFF 43 /* 5 + 4 + 2 (version) + 32 (random) */

static int sni(const unsigned char *buf, size_t len, char *name)
{
	return hutch_tls_sni(buf, len, name, NAME_SIZE);
}

/* A copy of a hello to corrupt. */
struct msg {
	unsigned char b[1024];
	size_t n;
};

static void msg_copy(struct msg *m, const unsigned char *buf, size_t len)
{
	ASSERT(len <= sizeof(m->b));
	memcpy(m->b, buf, len);
	m->n = len;
}

static void put(struct msg *m, const void *p, size_t n)
{
	ASSERT(m->n + n <= sizeof(m->b));
	memcpy(m->b + m->n, p, n);
	m->n += n;
}

static void put8(struct msg *m, unsigned v)
{
	unsigned char c = (unsigned char)v;

	put(m, &c, 1);
}

static void put16(struct msg *m, unsigned v)
{
	put8(m, v >> 8);
	put8(m, v & 0xff);
}

static void set16(struct msg *m, size_t off, unsigned v)
{
	m->b[off] = (unsigned char)(v >> 8);
	m->b[off + 1] = (unsigned char)(v & 0xff);
}

static unsigned get16(const struct msg *m, size_t off)
{
	return (unsigned)m->b[off] << 8 | m->b[off + 1];
}

/* A server_name extension with one entry: type, then `name`. */
static void put_sni_ext(struct msg *m, unsigned type, const char *name, size_t n)
{
	put16(m, 0); /* extension type server_name */
	put16(m, (unsigned)n + 5);
	put16(m, (unsigned)n + 3); /* ServerNameList */
	put8(m, type);
	put16(m, (unsigned)n);
	put(m, name, n);
}

/* A minimal ClientHello record around the extension bytes exts (no
 * extensions block at all when exts is NULL), with every length right. */
static void build_hello(struct msg *m, const struct msg *exts)
{
	static const unsigned char random[32] = {0};
	size_t hs;

	m->n = 0;
	put(m, "\x16\x03\x01\x00\x00", 5); /* record length set below */
	put(m, "\x01\x00\x00\x00", 4);	   /* handshake length set below */
	put16(m, 0x0303);
	put(m, random, sizeof(random));
	put8(m, 0);		       /* legacy_session_id */
	put(m, "\x00\x02\x13\x01", 4); /* cipher_suites: TLS_AES_128_GCM_SHA256 */
	put(m, "\x01\x00", 2);	       /* compression: null */
	if (exts) {
		put16(m, (unsigned)exts->n);
		put(m, exts->b, exts->n);
	}
	set16(m, REC_LEN_OFF, (unsigned)(m->n - 5));
	hs = m->n - 9;
	m->b[HS_LEN_OFF] = (unsigned char)(hs >> 16);
	set16(m, HS_LEN_OFF + 1, (unsigned)(hs & 0xffff));
}

static void build_sni_hello(struct msg *m, const char *name, size_t n)
{
	struct msg exts = {.n = 0};

	put16(&exts, 0x002b); /* supported_versions, before SNI as some clients do */
	put16(&exts, 3);
	put(&exts, "\x02\x03\x04", 3);
	put_sni_ext(&exts, 0, name, n);
	build_hello(m, &exts);
}

/* Offset of the SNI host name in a hello that names `name`. */
static size_t name_offset(const struct msg *m, const char *name)
{
	size_t n = strlen(name);

	for (size_t i = 0; i + n <= m->n; i++)
		if (memcmp(m->b + i, name, n) == 0)
			return i;
	TAP_FAIL("'%s' not in the hello", name);
}

/* Offset of the extensions block length in a real hello. */
static size_t exts_offset(const struct msg *m)
{
	size_t off = SID_LEN_OFF;

	off += 1 + m->b[off];	  /* session id */
	off += 2 + get16(m, off); /* cipher suites */
	off += 1 + m->b[off];	  /* compression methods */
	ASSERT(off + 2 <= m->n);
	return off;
}

/* Every strict prefix of buf[0..len) is "need more" or -1, never a name;
 * the whole is `want`. */
static void expect_prefixes(const unsigned char *buf, size_t len, int want)
{
	char name[NAME_SIZE];

	for (size_t k = 0; k < len; k++) {
		int rc = sni(buf, k, name);
		if (rc != 0 && (want != -1 || rc != -1))
			TAP_FAIL("prefix of %zu/%zu bytes: %d, want 0%s", k, len, rc,
				 want == -1 ? " or -1" : "");
		ASSERT_STREQ(name, "");
	}
	ASSERT_EQ(sni(buf, len, name), want);
}

/* The hello with the uint16 at off changed by delta is refused, and no
 * prefix of it gives a name. */
static void expect_bad16(const unsigned char *buf, size_t len, size_t off, int delta)
{
	struct msg m;
	char name[NAME_SIZE];

	msg_copy(&m, buf, len);
	set16(&m, off, (unsigned)((int)get16(&m, off) + delta) & 0xffff);
	if (sni(m.b, m.n, name) != -1)
		TAP_FAIL("uint16 at %zu changed by %d: not refused (name '%s')", off, delta, name);
	expect_prefixes(m.b, m.n, -1);
}

static void test_sni_tls13_hello(void)
{
	char name[NAME_SIZE];

	ASSERT_EQ(sni(hello_sni, sizeof(hello_sni), name), 1);
	ASSERT_STREQ(name, "example.com");
}

static void test_sni_every_prefix_needs_more(void)
{
	expect_prefixes(hello_sni, sizeof(hello_sni), 1);
	expect_prefixes(hello_no_sni, sizeof(hello_no_sni), -2);
}

static void test_sni_bytes_after_the_record_ignored(void)
{
	struct msg m;
	char name[NAME_SIZE];

	msg_copy(&m, hello_sni, sizeof(hello_sni));
	put(&m, "GET / HTTP/1.1\r\n", 16);
	ASSERT_EQ(sni(m.b, m.n, name), 1);
	ASSERT_STREQ(name, "example.com");
}

static void test_sni_absent(void)
{
	struct msg m;
	struct msg exts = {.n = 0};
	char name[NAME_SIZE] = "untouched";

	ASSERT_EQ(sni(hello_no_sni, sizeof(hello_no_sni), name), -2);
	ASSERT_STREQ(name, "");
	/* no extensions block at all (before TLS 1.2), and an empty one */
	build_hello(&m, NULL);
	expect_prefixes(m.b, m.n, -2);
	build_hello(&m, &exts);
	expect_prefixes(m.b, m.n, -2);
}

static void test_sni_not_tls(void)
{
	static const struct {
		const char *text;
		size_t len;
	} inputs[] = {
#define T(s) {s, sizeof(s) - 1}
		T("GET / HTTP/1.1\r\nHost: example.com\r\n\r\n"),
		T("CONNECT example.com:443 HTTP/1.1\r\n\r\n"),
		T("SSH-2.0-OpenSSH_9.2\r\n"),
		T("G"),
		T("\x80\x2e\x01\x03\x01"),     /* SSLv2-style ClientHello */
		T("\x17\x03\x03\x00\x10"),     /* application data */
		T("\x16\x02\x00\x00\x10"),     /* version 2 */
		T("\x16\x03\x01\x00\x00"),     /* empty record */
		T("\x16\x03\x01\x40\x01"),     /* 16385 bytes: more than TLS allows */
		T("\x16\x03\x01\x00\x10\x02"), /* a ServerHello */
		T("\x16\x03\x01\x00\x03\x01"), /* no room for the handshake header */
#undef T
	};
	char name[NAME_SIZE];

	for (size_t i = 0; i < sizeof(inputs) / sizeof(inputs[0]); i++) {
		int rc = sni((const unsigned char *)inputs[i].text, inputs[i].len, name);
		if (rc != -1)
			TAP_FAIL("input %zu: %d, want -1", i, rc);
	}
	/* a header that may still be TLS: wait */
	ASSERT_EQ(sni((const unsigned char *)"\x16\x03\x01\x40\x00", 5, name), 0);
	ASSERT_EQ(sni((const unsigned char *)"", 0, name), 0);
}

static void test_sni_corrupt_lengths(void)
{
	struct msg m;
	size_t name_off;
	size_t exts_off;
	size_t ciphers_off;

	msg_copy(&m, hello_sni, sizeof(hello_sni));
	name_off = name_offset(&m, "example.com");
	exts_off = exts_offset(&m);
	ciphers_off = SID_LEN_OFF + 1 + m.b[SID_LEN_OFF];
	for (int delta = -1; delta <= 1; delta += 2) {
		expect_bad16(hello_sni, sizeof(hello_sni), REC_LEN_OFF, delta);
		expect_bad16(hello_sni, sizeof(hello_sni), HS_LEN_OFF + 1, delta);
		expect_bad16(hello_sni, sizeof(hello_sni), exts_off, delta);
		expect_bad16(hello_sni, sizeof(hello_sni), name_off - 2, delta); /* HostName */
		expect_bad16(hello_sni, sizeof(hello_sni), name_off - 5, delta); /* list */
		expect_bad16(hello_sni, sizeof(hello_sni), name_off - 7, delta); /* extension */
		expect_bad16(hello_sni, sizeof(hello_sni), ciphers_off, delta);
	}
	/* lengths far past their container */
	expect_bad16(hello_sni, sizeof(hello_sni), HS_LEN_OFF + 1, 0x7fff);
	expect_bad16(hello_sni, sizeof(hello_sni), name_off - 2, 0x7fff);
	expect_bad16(hello_sni, sizeof(hello_sni), name_off - 2, -(int)(name_off - 2));
	/* the high byte of the uint24 handshake length */
	m.b[HS_LEN_OFF] = 1;
	expect_prefixes(m.b, m.n, -1);
	/* a 33-byte session id */
	msg_copy(&m, hello_sni, sizeof(hello_sni));
	m.b[SID_LEN_OFF] = 33;
	expect_prefixes(m.b, m.n, -1);
}

static void test_sni_rejected_early(void)
{
	struct msg m;
	char name[NAME_SIZE];

	/* A record length that cannot hold its ClientHello is refused as soon
	 * as the handshake header arrives, without waiting for the rest. */
	msg_copy(&m, hello_sni, sizeof(hello_sni));
	set16(&m, REC_LEN_OFF, 100);
	ASSERT_EQ(sni(m.b, 9, name), -1);
	ASSERT_EQ(sni(m.b, 8, name), 0);
}

static void test_sni_upper_case_lowered(void)
{
	struct msg m;
	char name[NAME_SIZE];
	size_t off;

	msg_copy(&m, hello_sni, sizeof(hello_sni));
	off = name_offset(&m, "example.com");
	memcpy(m.b + off, "ExAMPLE.COM", 11);
	ASSERT_EQ(sni(m.b, m.n, name), 1);
	ASSERT_STREQ(name, "example.com");
}

/* A 300-byte name, in labels of 49 */
static void build_long_hello(struct msg *m, char *want)
{
	memset(want, 'a', 300);
	for (int i = 49; i < 300; i += 50)
		want[i] = '.';
	want[300] = '\0';
	build_sni_hello(m, want, 300);
}

static void test_sni_long_name(void)
{
	struct msg m;
	char want[301];
	char name[64];

	build_long_hello(&m, want);
	ASSERT_EQ(hutch_tls_sni(m.b, m.n, name, sizeof(name)), -1);
	ASSERT_STREQ(name, "");
	ASSERT_EQ(hutch_tls_sni(m.b, m.n, NULL, 0), -1);
}

static void test_sni_name_size_boundary(void)
{
	struct msg m;
	char want[301];
	char name[512];

	build_long_hello(&m, want);
	ASSERT_EQ(hutch_tls_sni(m.b, m.n, name, 300), -1);
	ASSERT_EQ(hutch_tls_sni(m.b, m.n, name, 301), 1);
	ASSERT_STREQ(name, want);
	ASSERT_EQ(hutch_tls_sni(m.b, m.n, name, sizeof(name)), 1);
	ASSERT_STREQ(name, want);
}

static void test_sni_bad_bytes(void)
{
	static const char *const names[] = {
		"a/b.test", "a b.test", "a:443", "\xc3\xa9.test", "a\nb", "a*.test",
	};
	struct msg m;
	char name[NAME_SIZE];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		build_sni_hello(&m, names[i], strlen(names[i]));
		if (sni(m.b, m.n, name) != -1)
			TAP_FAIL("'%s' accepted as '%s'", names[i], name);
		ASSERT_STREQ(name, "");
	}
	build_sni_hello(&m, "a\0b", 3);
	ASSERT_EQ(sni(m.b, m.n, name), -1);
	build_sni_hello(&m, "", 0);
	ASSERT_EQ(sni(m.b, m.n, name), -1);
	build_sni_hello(&m, "Under_Score-9.hutch.test", 24);
	ASSERT_EQ(sni(m.b, m.n, name), 1);
	ASSERT_STREQ(name, "under_score-9.hutch.test");
}

static void test_sni_ambiguous(void)
{
	struct msg m;
	struct msg exts = {.n = 0};
	char name[NAME_SIZE];

	/* two server_name extensions */
	put_sni_ext(&exts, 0, "allowed.hutch.test", 18);
	put_sni_ext(&exts, 0, "other.hutch.test", 16);
	build_hello(&m, &exts);
	expect_prefixes(m.b, m.n, -1);
	/* two entries in one list */
	exts.n = 0;
	put16(&exts, 0);
	put16(&exts, 2 + 3 + 18 + 3 + 16);
	put16(&exts, 3 + 18 + 3 + 16);
	put8(&exts, 0);
	put16(&exts, 18);
	put(&exts, "allowed.hutch.test", 18);
	put8(&exts, 0);
	put16(&exts, 16);
	put(&exts, "other.hutch.test", 16);
	build_hello(&m, &exts);
	ASSERT_EQ(sni(m.b, m.n, name), -1);
	/* a name type that does not exist */
	exts.n = 0;
	put_sni_ext(&exts, 1, "allowed.hutch.test", 18);
	build_hello(&m, &exts);
	ASSERT_EQ(sni(m.b, m.n, name), -1);
	/* the one well-formed entry, for contrast */
	exts.n = 0;
	put_sni_ext(&exts, 0, "allowed.hutch.test", 18);
	build_hello(&m, &exts);
	ASSERT_EQ(sni(m.b, m.n, name), 1);
	ASSERT_STREQ(name, "allowed.hutch.test");
}

static void test_sni_hello_longer_than_record(void)
{
	struct msg m;
	char name[NAME_SIZE];

	/* The ClientHello says one byte more than the record holds, the record
	 * saying it all: a second record would be needed, which is refused. */
	msg_copy(&m, hello_sni, sizeof(hello_sni));
	set16(&m, HS_LEN_OFF + 1, get16(&m, HS_LEN_OFF + 1) + 1);
	put8(&m, 0);
	ASSERT_EQ(sni(m.b, m.n, name), -1);
	/* and so is anything after the ClientHello inside its record */
	msg_copy(&m, hello_sni, sizeof(hello_sni));
	set16(&m, REC_LEN_OFF, get16(&m, REC_LEN_OFF) + 1);
	put8(&m, 0);
	ASSERT_EQ(sni(m.b, m.n, name), -1);
}

static const struct tap_case cases[] = {
	TAP_CASE(test_sni_tls13_hello),
	TAP_CASE(test_sni_every_prefix_needs_more),
	TAP_CASE(test_sni_bytes_after_the_record_ignored),
	TAP_CASE(test_sni_absent),
	TAP_CASE(test_sni_not_tls),
	TAP_CASE(test_sni_corrupt_lengths),
	TAP_CASE(test_sni_rejected_early),
	TAP_CASE(test_sni_upper_case_lowered),
	TAP_CASE(test_sni_long_name),
	TAP_CASE(test_sni_name_size_boundary),
	TAP_CASE(test_sni_bad_bytes),
	TAP_CASE(test_sni_ambiguous),
	TAP_CASE(test_sni_hello_longer_than_record),
	TAP_END,
};

TAP_MAIN(cases)
