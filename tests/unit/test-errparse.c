/* Unit tests for src/run/errparse.c: structured errors from runtime stderr. */
#include "tap.h"
#include "run/errparse.h"

static void rt_free(struct hutch_rt_error *e)
{
	free(e->type);
	free(e->message);
	free(e->traceback);
}

/* Parse `text` with `fn`; expect a hit with this type and message, and a
 * traceback that starts with tb_start and ends with tb_end. */
static void expect(bool (*fn)(const char *, size_t, struct hutch_rt_error *), const char *text,
		   const char *type, const char *message, const char *tb_start, const char *tb_end)
{
	struct hutch_rt_error e;
	size_t tl;

	if (!fn(text, strlen(text), &e))
		TAP_FAIL("no error found in:\n%s", text);
	ASSERT_STREQ(e.type, type);
	ASSERT_STREQ(e.message, message);
	ASSERT(e.traceback != NULL);
	if (strncmp(e.traceback, tb_start, strlen(tb_start)) != 0)
		TAP_FAIL("traceback starts \"%.40s\", want \"%s\"", e.traceback, tb_start);
	tl = strlen(e.traceback);
	if (tl < strlen(tb_end) || strcmp(e.traceback + tl - strlen(tb_end), tb_end) != 0)
		TAP_FAIL("traceback \"%s\" does not end with \"%s\"", e.traceback, tb_end);
	rt_free(&e);
}

static void expect_none(bool (*fn)(const char *, size_t, struct hutch_rt_error *), const char *text)
{
	struct hutch_rt_error e;

	if (fn(text, strlen(text), &e))
		TAP_FAIL("false positive %s: %s in:\n%s", e.type, e.message, text);
	ASSERT(e.type == NULL && e.message == NULL && e.traceback == NULL);
}

static void test_errparse_python_zero_division(void)
{
	expect(hutch_errparse_python,
	       "Traceback (most recent call last):\n"
	       "  File \"/workspace/main.py\", line 1, in <module>\n"
	       "    print(1/0)\n"
	       "          ~^~\n"
	       "ZeroDivisionError: division by zero\n",
	       "ZeroDivisionError", "division by zero", "Traceback (most recent call last):\n",
	       "~^~\nZeroDivisionError: division by zero");
}

static void test_errparse_python_skips_output_before_traceback(void)
{
	expect(hutch_errparse_python,
	       "some warning the program printed\n"
	       "Traceback (most recent call last):\n"
	       "  File \"/workspace/main.py\", line 3, in <module>\n"
	       "    f()\n"
	       "KeyError: 'missing'\r\n\r\n",
	       "KeyError", "'missing'", "Traceback (most recent call last):\n", "'missing'");
}

static void test_errparse_python_chained_takes_last(void)
{
	static const char text[] =
		"Traceback (most recent call last):\n"
		"  File \"/workspace/main.py\", line 2, in <module>\n"
		"    {}['x']\n"
		"KeyError: 'x'\n"
		"\n"
		"During handling of the above exception, another exception occurred:\n"
		"\n"
		"Traceback (most recent call last):\n"
		"  File \"/workspace/main.py\", line 4, in <module>\n"
		"    raise ValueError('bad value')\n"
		"ValueError: bad value\n";
	struct hutch_rt_error e;

	expect(hutch_errparse_python, text, "ValueError", "bad value",
	       "Traceback (most recent call last):\n  File \"/workspace/main.py\", line 4",
	       "ValueError: bad value");
	ASSERT(hutch_errparse_python(text, sizeof(text) - 1, &e));
	ASSERT(strstr(e.traceback, "KeyError") == NULL);
	rt_free(&e);
}

static void test_errparse_python_direct_cause_takes_last(void)
{
	expect(hutch_errparse_python,
	       "Traceback (most recent call last):\n"
	       "  File \"/workspace/main.py\", line 2, in <module>\n"
	       "OSError: [Errno 2] No such file or directory: 'x'\n"
	       "\n"
	       "The above exception was the direct cause of the following exception:\n"
	       "\n"
	       "Traceback (most recent call last):\n"
	       "  File \"/workspace/main.py\", line 4, in <module>\n"
	       "RuntimeError: config missing\n",
	       "RuntimeError", "config missing",
	       "Traceback (most recent call last):\n  File \"/workspace/main.py\", line 4",
	       "config missing");
}

static void test_errparse_python_syntax_error_without_header(void)
{
	expect(hutch_errparse_python,
	       "  File \"/workspace/main.py\", line 1\n"
	       "    print(\n"
	       "         ^\n"
	       "SyntaxError: '(' was never closed\n",
	       "SyntaxError", "'(' was never closed", "  File \"/workspace/main.py\", line 1\n",
	       "SyntaxError: '(' was never closed");
	expect(hutch_errparse_python,
	       "  File \"/workspace/main.py\", line 2\n"
	       "    y = 2\n"
	       "IndentationError: unexpected indent\n",
	       "IndentationError", "unexpected indent", "  File \"", "unexpected indent");
}

static void test_errparse_python_module_qualified_type(void)
{
	expect(hutch_errparse_python,
	       "Traceback (most recent call last):\n"
	       "  File \"/usr/lib/python3.11/json/decoder.py\", line 355, in raw_decode\n"
	       "    raise JSONDecodeError(\"Expecting value\", s, err.value) from None\n"
	       "json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)\n",
	       "json.decoder.JSONDecodeError", "Expecting value: line 1 column 1 (char 0)",
	       "Traceback", "(char 0)");
}

static void test_errparse_python_type_without_message(void)
{
	expect(hutch_errparse_python,
	       "Traceback (most recent call last):\n"
	       "  File \"/workspace/main.py\", line 1, in <module>\n"
	       "KeyboardInterrupt\n",
	       "KeyboardInterrupt", "", "Traceback", "KeyboardInterrupt");
	expect(hutch_errparse_python,
	       "Traceback (most recent call last):\n"
	       "  File \"/workspace/main.py\", line 1, in <module>\n"
	       "StopIteration\n",
	       "StopIteration", "", "Traceback", "StopIteration");
}

static void test_errparse_python_no_false_positive(void)
{
	expect_none(hutch_errparse_python, "");
	expect_none(hutch_errparse_python, "\n\n  \n");
	expect_none(hutch_errparse_python, "hello world\n");
	expect_none(hutch_errparse_python, "warning: disk almost full\nError: not really\n");
	/* an exception-looking line with no traceback above it */
	expect_none(hutch_errparse_python, "ValueError: printed by the program\n");
	expect_none(hutch_errparse_python, "log line\nRuntimeError: also printed\n");
	/* a traceback, but the program printed more after it */
	expect_none(hutch_errparse_python, "Traceback (most recent call last):\n"
					   "  File \"/workspace/main.py\", line 1, in <module>\n"
					   "ValueError: x\n"
					   "but the program went on printing\n");
	/* the last line is not an exception name */
	expect_none(hutch_errparse_python, "Traceback (most recent call last):\n"
					   "  File \"/workspace/main.py\", line 1, in <module>\n"
					   "not an error: x\n");
	expect_none(hutch_errparse_python, "Traceback (most recent call last):\n"
					   "  File \"/workspace/main.py\", line 1, in <module>\n"
					   "Something: x\n");
	expect_none(hutch_errparse_python, "Traceback (most recent call last):\n"
					   "  File \"/workspace/main.py\", line 1, in <module>\n"
					   "9Error: x\n");
}

static void test_errparse_python_respects_length(void)
{
	static const char text[] = "Traceback (most recent call last):\n"
				   "  File \"/workspace/main.py\", line 1, in <module>\n"
				   "ValueError: abc\n"
				   "extra text that is beyond n";
	struct hutch_rt_error e;
	size_t n = strlen(text) - strlen("extra text that is beyond n");

	ASSERT(hutch_errparse_python(text, n, &e));
	ASSERT_STREQ(e.message, "abc");
	rt_free(&e);
	ASSERT(!hutch_errparse_python(text, sizeof(text) - 1, &e));
}

static void test_errparse_node_type_error(void)
{
	expect(hutch_errparse_node,
	       "/workspace/main.js:1\n"
	       "null.x\n"
	       "     ^\n"
	       "\n"
	       "TypeError: Cannot read properties of null (reading 'x')\n"
	       "    at Object.<anonymous> (/workspace/main.js:1:6)\n"
	       "    at Module._compile (node:internal/modules/cjs/loader:1256:14)\n"
	       "\n"
	       "Node.js v18.19.0\n",
	       "TypeError", "Cannot read properties of null (reading 'x')",
	       "/workspace/main.js:1\n", "(node:internal/modules/cjs/loader:1256:14)");
}

static void test_errparse_node_minimal(void)
{
	expect(hutch_errparse_node, "TypeError: x\n    at foo (/workspace/main.js:2:3)\n",
	       "TypeError", "x", "TypeError: x\n", "(/workspace/main.js:2:3)");
	expect(hutch_errparse_node,
	       "ReferenceError: y is not defined\n    at /workspace/main.js:1:1", "ReferenceError",
	       "y is not defined", "ReferenceError", "main.js:1:1");
	expect(hutch_errparse_node, "Error\n    at f (/workspace/main.js:1:7)\n", "Error", "",
	       "Error\n", "1:7)");
}

static void test_errparse_node_no_false_positive(void)
{
	expect_none(hutch_errparse_node, "");
	expect_none(hutch_errparse_node, "just some output\n");
	expect_none(hutch_errparse_node, "    at the start\n");
	expect_none(hutch_errparse_node, "I was\n    at home\n");
	expect_none(hutch_errparse_node, "\n    at nothing\n");
	expect_none(hutch_errparse_node, "TypeError: x\n");
	expect_none(hutch_errparse_node, "TypeError: x\n  at two spaces only\n");
}

static const struct tap_case cases[] = {
	TAP_CASE(test_errparse_python_zero_division),
	TAP_CASE(test_errparse_python_skips_output_before_traceback),
	TAP_CASE(test_errparse_python_chained_takes_last),
	TAP_CASE(test_errparse_python_direct_cause_takes_last),
	TAP_CASE(test_errparse_python_syntax_error_without_header),
	TAP_CASE(test_errparse_python_module_qualified_type),
	TAP_CASE(test_errparse_python_type_without_message),
	TAP_CASE(test_errparse_python_no_false_positive),
	TAP_CASE(test_errparse_python_respects_length),
	TAP_CASE(test_errparse_node_type_error),
	TAP_CASE(test_errparse_node_minimal),
	TAP_CASE(test_errparse_node_no_false_positive),
	TAP_END,
};

TAP_MAIN(cases)
