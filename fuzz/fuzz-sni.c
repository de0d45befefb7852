/* TLS SNI: never reads outside the input (ASan sees the exact-size buffer),
 * answers 1, 0, -1 or -2; a name it returns is clean, lower-case, fits the
 * buffer exactly and is in the input; more bytes never turn a refusal or
 * an answer into something else. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fuzz.h"
#include "run/sni.h"

/* name, a clean lower-case host name, is somewhere in data (any case). */
static void check_name(const char *name, const uint8_t *data, size_t size)
{
	size_t n = strlen(name);

	if (n == 0)
		abort();
	for (size_t i = 0; i < n; i++)
		if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9') ||
		      strchr(".-_", name[i])))
			abort();
	for (size_t i = 0; i + n <= size; i++)
		if (strncasecmp((const char *)data + i, name, n) == 0)
			return;
	abort();
}

int hutch_fuzz_sni(const uint8_t *data, size_t size)
{
	char name[HUTCH_TLS_SNI_MAX_BYTES];
	char again[HUTCH_TLS_SNI_MAX_BYTES];
	size_t n;
	size_t step;
	int rc = hutch_tls_sni(data, size, name, sizeof(name));

	if (rc < -2 || rc > 1 || (rc != 1 && name[0] != '\0'))
		abort();
	/* the header's promise: this many bytes always get an answer */
	if (rc == 0 && size >= HUTCH_TLS_SNI_MAX_BYTES)
		abort();
	if (rc == 1) {
		check_name(name, data, size);
		/* the buffer size decides at exactly strlen + 1 */
		n = strlen(name);
		if (hutch_tls_sni(data, size, again, n + 1) != 1 || strcmp(again, name) != 0 ||
		    hutch_tls_sni(data, size, again, n) != -1 ||
		    hutch_tls_sni(data, size, NULL, 0) != -1)
			abort();
	}
	/* Prefixes (a sample of them, for speed on big inputs): each needs
	 * more, or gives the same refusal or answer as the whole. */
	step = size / 512 + 1;
	for (size_t k = 0; k < size; k += step) {
		int pre = hutch_tls_sni(data, k, again, sizeof(again));
		if (pre == 0)
			continue;
		if (pre != rc || (rc == 1 && strcmp(again, name) != 0))
			abort();
	}
	return 0;
}

#ifdef HUTCH_FUZZ_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	return hutch_fuzz_sni(d, n);
}
#endif
