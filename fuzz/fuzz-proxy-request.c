/* The egress proxy's request line: an accepted request names a host of
 * allowed characters and a port in 1-65535, its origin-form path starts
 * with '/', and nothing is read past the input. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "run/proxy_parse.h"

int hutch_fuzz_proxy_request(const uint8_t *data, size_t size)
{
	char *head = strndup((const char *)data, size);
	struct hutch_proxy_request r;

	if (!head)
		return 0;
	if (hutch_proxy_parse_request(head, &r)) {
		if (!r.host[0] || r.port == 0 || r.port > 65535 || !r.rest)
			abort();
		for (const char *c = r.host; *c; c++)
			if (!strchr("abcdefghijklmnopqrstuvwxyz0123456789.-_:", *c))
				abort(); /* not lower case, or not a host character */
		if (!r.connect && r.path[0] != '/')
			abort();
		if (r.rest < head || r.rest > head + strlen(head))
			abort();
	}
	free(head);
	return 0;
}

#ifdef HUTCH_FUZZ_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	return hutch_fuzz_proxy_request(d, n);
}
#endif
