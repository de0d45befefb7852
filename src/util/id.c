#include <stdint.h>
#include <stdio.h>
#include <sys/random.h>

#include "util/id.h"
#include "util/time.h"

void hutch_id_new(char *out, size_t size, const char *prefix)
{
	uint64_t r = 0;

	/* Ids must not repeat across processes: use the kernel's CSPRNG; if it
	 * somehow fails, the clock still gives a distinct value. */
	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r))
		r ^= hutch_now_us() * 0x9e3779b97f4a7c15ull;
	snprintf(out, size, "%s_%016llx", prefix, (unsigned long long)r);
}
