/* The smallest embedder of libhutch: run a Python snippet, print the result
 * as JSON. Build: cc run-python.c $(pkg-config --cflags --static --libs hutch) */
#include <hutch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	const char *code = argc > 1 ? argv[1] : "print(6*7)";
	struct hutch_exec_request req;
	struct hutch_exec_result res;
	struct hutch_err err;
	char *json;

	hutch_request_init(&req);
	if (hutch_request_set_code(&req, "python", code, strlen(code)) < 0 ||
	    hutch_run(&req, NULL, &res, &err) < 0) {
		fprintf(stderr, "run-python: %s\n", err.msg);
		hutch_request_release(&req);
		return 2;
	}
	json = hutch_result_to_json(&res);
	printf("%s\n", json);
	free(json);
	hutch_result_release(&res);
	hutch_request_release(&req);
	return 0;
}
