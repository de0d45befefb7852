/* SNI from a TLS ClientHello (see sni.h). Wire formats: RFC 8446 §5.1
 * (record), §4 (handshake header), §4.1.2 (ClientHello), RFC 6066 §3
 * (server_name). Every vector is a length field followed by that many bytes,
 * and every length is checked against the vector that encloses it before
 * anything inside is read, so no input can make a read leave buf[0..len).
 *
 * The parse runs on the bytes that have arrived so far: a length field that
 * does not fit its container is -1 at once, even in a short prefix, so the
 * proxy does not wait for the rest of something that is already wrong. */
#include "run/sni.h"

#define TLS_RECORD_HEADER   5
#define TLS_RECORD_MAX	    16384 /* RFC 8446 §5.1: length MUST NOT exceed 2^14 */
#define TLS_HANDSHAKE	    22
#define TLS_CLIENT_HELLO    1
#define TLS_EXT_SERVER_NAME 0
#define TLS_NAME_HOST	    0
#define TLS_SESSION_ID_MAX  32
#define TLS_VERSION_MAJOR   3 /* SSL 3.0 to TLS 1.3 all say 3.x on the wire */

/* Results inside the parser: the answers of hutch_tls_sni(), and OK to go on. */
enum {
	OK = 1,
	NEED_MORE = 0,
	BAD = -1,
	NO_SNI = -2,
};

/* A vector being read. end comes from a length field the client wrote,
 * already checked to lie inside the enclosing vector, so pos <= end <= the
 * end of the record always. have is how many bytes of buf the client has
 * sent: going past end is malformed input, going past have only means that
 * the rest has not arrived yet. */
struct span {
	const unsigned char *buf;
	size_t pos;
	size_t end;
	size_t have;
};

/* Reads an n-byte (n <= 3) big-endian number. */
static int get(struct span *s, size_t n, size_t *v)
{
	if (n > s->end - s->pos)
		return BAD;
	/* pos <= 5 + 2^14 and n <= 3: the sum cannot wrap */
	if (s->pos + n > s->have)
		return NEED_MORE;
	*v = 0;
	for (size_t i = 0; i < n; i++)
		*v = *v << 8 | s->buf[s->pos + i];
	s->pos += n;
	return OK;
}

/* Splits the next n bytes off s into out, skipping them in s. Their content
 * need not have arrived: only reads through get() look at bytes. */
static int take(struct span *s, size_t n, struct span *out)
{
	if (n > s->end - s->pos)
		return BAD;
	*out = *s;
	out->end = s->pos + n;
	s->pos += n;
	return OK;
}

/* Reads a vector<min..max> with a k-byte length field into out. */
static int vec(struct span *s, size_t k, size_t min, size_t max, struct span *out)
{
	size_t n;
	int rc = get(s, k, &n);

	if (rc != OK)
		return rc;
	if (n < min || n > max)
		return BAD;
	return take(s, n, out);
}

/* The server_name extension body: ServerNameList<1..2^16-1>. host_name is
 * the only name type there is, and RFC 6066 allows one name per type, so the
 * list holds exactly one entry. Anything more is refused rather than picked
 * from: the proxy must check the very name the server will use. */
static int parse_server_name(struct span *ext, struct span *host)
{
	struct span list;
	size_t type;
	int rc;

	if ((rc = vec(ext, 2, 1, 0xffff, &list)) != OK)
		return rc;
	if (ext->pos != ext->end)
		return BAD;
	if ((rc = get(&list, 1, &type)) != OK)
		return rc;
	if (type != TLS_NAME_HOST)
		return BAD;
	/* HostName<1..2^16-1> */
	if ((rc = vec(&list, 2, 1, 0xffff, host)) != OK)
		return rc;
	return list.pos == list.end ? OK : BAD;
}

/* The extensions block: finds the server_name extension, and refuses a
 * second one (TLS forbids repeats; a server could read either). */
static int parse_extensions(struct span *exts, struct span *host)
{
	struct span ext;
	size_t type;
	int found = 0;
	int rc;

	while (exts->pos < exts->end) {
		if ((rc = get(exts, 2, &type)) != OK)
			return rc;
		if ((rc = vec(exts, 2, 0, 0xffff, &ext)) != OK)
			return rc;
		if (type != TLS_EXT_SERVER_NAME)
			continue;
		if (found)
			return BAD;
		found = 1;
		if ((rc = parse_server_name(&ext, host)) != OK)
			return rc;
	}
	return found ? OK : NO_SNI;
}

/* The ClientHello body, up to the extensions. */
static int parse_hello(struct span *hello, struct span *host)
{
	struct span skip;
	struct span exts;
	size_t major;
	size_t minor;
	int rc;

	/* legacy_version, then the 32-byte random */
	if ((rc = get(hello, 1, &major)) != OK)
		return rc;
	if (major != TLS_VERSION_MAJOR)
		return BAD;
	if ((rc = get(hello, 1, &minor)) != OK || (rc = take(hello, 32, &skip)) != OK)
		return rc;
	/* legacy_session_id<0..32>, cipher_suites<2..2^16-2> (2-byte codes),
	 * legacy_compression_methods<1..2^8-1> */
	if ((rc = vec(hello, 1, 0, TLS_SESSION_ID_MAX, &skip)) != OK)
		return rc;
	if ((rc = vec(hello, 2, 2, 0xfffe, &skip)) != OK)
		return rc;
	if ((skip.end - skip.pos) % 2 != 0)
		return BAD;
	if ((rc = vec(hello, 1, 1, 0xff, &skip)) != OK)
		return rc;
	/* Before TLS 1.2 the extensions block is optional: none, no SNI. */
	if (hello->pos == hello->end)
		return NO_SNI;
	if ((rc = vec(hello, 2, 0, 0xffff, &exts)) != OK)
		return rc;
	if (hello->pos != hello->end)
		return BAD;
	return parse_extensions(&exts, host);
}

/* Copies the host name lower-cased; the proxy compares it with a host
 * name, and the bytes allowed are those of DNS names. */
static int copy_name(const struct span *host, char *name, size_t name_size)
{
	size_t n = host->end - host->pos;

	if (n >= name_size)
		return BAD;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = host->buf[host->pos + i];
		if (c >= 'A' && c <= 'Z')
			c = (unsigned char)(c - 'A' + 'a');
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
		      c == '_')) {
			name[0] = '\0';
			return BAD;
		}
		name[i] = (char)c;
	}
	name[n] = '\0';
	return OK;
}

int hutch_tls_sni(const unsigned char *buf, size_t len, char *name, size_t name_size)
{
	struct span rec = {buf, 0, TLS_RECORD_HEADER, len};
	struct span hello;
	struct span host;
	size_t v;
	int rc;

	if (name_size > 0)
		name[0] = '\0';
	/* TLSPlaintext: content type, legacy_record_version, length. */
	if ((rc = get(&rec, 1, &v)) != OK)
		return rc;
	if (v != TLS_HANDSHAKE)
		return BAD;
	if ((rc = get(&rec, 1, &v)) != OK)
		return rc;
	if (v != TLS_VERSION_MAJOR)
		return BAD;
	if ((rc = get(&rec, 1, &v)) != OK || (rc = get(&rec, 2, &v)) != OK)
		return rc;
	/* Zero-length handshake records are forbidden (RFC 8446 §5.1). */
	if (v == 0 || v > TLS_RECORD_MAX)
		return BAD;
	rec.end = TLS_RECORD_HEADER + v;
	/* Handshake: msg_type, uint24 length. The ClientHello must fit this one
	 * record (reassembly across records is not worth it: real ones are a
	 * few hundred bytes) and must be all of it: it is the client's first
	 * message, and nothing else of the handshake can share its record. */
	if ((rc = get(&rec, 1, &v)) != OK)
		return rc;
	if (v != TLS_CLIENT_HELLO)
		return BAD;
	if ((rc = vec(&rec, 3, 0, TLS_RECORD_MAX, &hello)) != OK)
		return rc;
	if (rec.pos != rec.end)
		return BAD;
	rc = parse_hello(&hello, &host);
	if (rc == BAD)
		return BAD;
	/* Answer only on a whole record: until then a later byte could still
	 * make it malformed. */
	if (len < rec.end)
		return NEED_MORE;
	if (rc != OK)
		return rc;
	return copy_name(&host, name, name_size);
}
