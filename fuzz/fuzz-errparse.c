/* Runtime error parsers: never crash on any stderr, and every string they
 * return is a piece of the input (or nothing at all when they find none). */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "run/errparse.h"

static int inside(const char *s, const uint8_t *data, size_t size)
{
	size_t n = strlen(s);

	return n <= size && (n == 0 || memmem(data, size, s, n) != NULL);
}

static void check(bool found, struct hutch_rt_error *e, const uint8_t *data, size_t size)
{
	if (!found) {
		if (e->type || e->message || e->traceback)
			abort();
		return;
	}
	if (!e->type || !e->message || !e->traceback || !e->type[0])
		abort();
	if (!inside(e->type, data, size) || !inside(e->message, data, size) ||
	    !inside(e->traceback, data, size))
		abort();
	free(e->type);
	free(e->message);
	free(e->traceback);
}

int hutch_fuzz_errparse(const uint8_t *data, size_t size)
{
	struct hutch_rt_error e;

	check(hutch_errparse_python((const char *)data, size, &e), &e, data, size);
	check(hutch_errparse_node((const char *)data, size, &e), &e, data, size);
	return 0;
}

#ifdef HUTCH_FUZZ_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	return hutch_fuzz_errparse(d, n);
}
#endif
