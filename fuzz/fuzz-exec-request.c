/* ExecRequest JSON: decoding never crashes or leaks, fails with a message,
 * and whatever it accepts also validates on its own. */
#include <stdlib.h>

#include "fuzz.h"
#include "hutch.h"

int hutch_fuzz_exec_request(const uint8_t *data, size_t size)
{
	struct hutch_exec_request req;
	struct hutch_err err = {0};

	hutch_request_init(&req);
	if (hutch_request_from_json(&req, (const char *)data, size, &err) == 0) {
		if (hutch_request_validate(&req, &err) != 0)
			abort();
		/* ownership: every file has a path and data; argv is terminated */
		for (size_t i = 0; i < req.nfiles; i++)
			if (!req.files[i].path || !req.files[i].data)
				abort();
		if (!req.language && (!req.argv || !req.argv[0]))
			abort();
	} else if (err.code == 0 || err.msg[0] == '\0' || req.language || req.argv || req.nfiles) {
		abort(); /* a failure names itself and leaves nothing behind */
	}
	hutch_request_release(&req);
	return 0;
}

#ifdef HUTCH_FUZZ_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	return hutch_fuzz_exec_request(d, n);
}
#endif
