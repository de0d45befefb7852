/* The server name a TLS client asks for, read from the first bytes it sends
 * on a tunnel: the host_name of the server_name extension (RFC 6066 §3) of
 * its ClientHello (RFC 8446 §4.1.2). The network proxy compares it with the
 * CONNECT host, so a client cannot tunnel to an allowed host and then ask the
 * server behind it for another (domain fronting).
 *
 * Pure code: no I/O, no allocation, no global state; safe on any input
 * (fuzzed by fuzz/fuzz-sni.c). */
#ifndef HUTCH_RUN_SNI_H
#define HUTCH_RUN_SNI_H

#include <stddef.h>

/* The most bytes hutch_tls_sni() ever looks at: a 5-byte record header and
 * the largest record body (RFC 8446 §5.1). A caller that has buffered this
 * many bytes has its answer. */
#define HUTCH_TLS_SNI_MAX_BYTES (5 + 16384)

/* Finds the SNI host name in buf[0..len), the first bytes a client sent.
 * The ClientHello must be the whole content of the first record, which
 * must be a handshake record of at most 16384 bytes; bytes after that
 * record are ignored.
 *
 *  1  buf starts with such a ClientHello whose server_name extension holds
 *     one host_name: the name, lower-cased, is copied into name with its NUL
 *  0  buf is too short to tell, and what is there may start a ClientHello:
 *     call again with more bytes (at most HUTCH_TLS_SNI_MAX_BYTES)
 * -2  a complete, well-formed ClientHello without a server_name extension
 * -1  anything else: not TLS, malformed, a ClientHello longer than its
 *     record, or a server_name that is ambiguous (two extensions, two
 *     entries), empty, longer than name_size - 1 bytes or with a byte
 *     outside [A-Za-z0-9._-]
 *
 * When name_size > 0, name is "" unless 1 is returned; with name_size 0,
 * name is never written (and 1 is never returned). */
int hutch_tls_sni(const unsigned char *buf, size_t len, char *name, size_t name_size);

#endif
