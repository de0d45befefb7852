#include <ctype.h>
#include <string.h>

#include "run/errparse.h"
#include "util/mem.h"

/* Start of the line that contains s[i]. */
static size_t line_start(const char *s, size_t i)
{
	while (i > 0 && s[i - 1] != '\n')
		i--;
	return i;
}

/* Last occurrence of needle that starts a line, before `end`; or (size_t)-1. */
static size_t last_line_with(const char *s, size_t end, const char *needle)
{
	size_t nl = strlen(needle);

	for (size_t i = end; i-- > 0;) {
		if ((i == 0 || s[i - 1] == '\n') && i + nl <= end && memcmp(s + i, needle, nl) == 0)
			return i;
	}
	return (size_t)-1;
}

/* "pkg.module.SomeError" ending in a conventional exception suffix, then
 * ":" or end of line. Returns the length of the type name, or 0. */
static size_t exception_name_len(const char *s, size_t n)
{
	static const char *const suffixes[] = {"Error",	    "Exception", "Interrupt", "Exit",
					       "Iteration", "Warning",	 "Group"};
	size_t i = 0;

	if (n == 0 || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
		return 0;
	while (i < n && (isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == '.'))
		i++;
	if (i < n && s[i] != ':')
		return 0;
	for (size_t k = 0; k < sizeof(suffixes) / sizeof(suffixes[0]); k++) {
		size_t sl = strlen(suffixes[k]);
		if (i >= sl && memcmp(s + i - sl, suffixes[k], sl) == 0)
			return i;
	}
	return 0;
}

static void fill(struct hutch_rt_error *e, const char *s, size_t tb_start, size_t last, size_t end,
		 size_t type_len)
{
	const char *msg = s + last + type_len;
	size_t msg_len = end - last - type_len;

	if (msg_len && *msg == ':') {
		msg++;
		msg_len--;
	}
	while (msg_len && *msg == ' ') {
		msg++;
		msg_len--;
	}
	e->type = hutch_xstrndup(s + last, type_len);
	e->message = hutch_xstrndup(msg, msg_len);
	e->traceback = hutch_xstrndup(s + tb_start, end - tb_start);
}

bool hutch_errparse_python(const char *s, size_t n, struct hutch_rt_error *e)
{
	size_t end = n;
	size_t last;
	size_t type_len;
	size_t tb;

	memset(e, 0, sizeof(*e));
	while (end > 0 && (s[end - 1] == '\n' || s[end - 1] == '\r' || s[end - 1] == ' '))
		end--;
	if (end == 0)
		return false;
	last = line_start(s, end - 1);
	type_len = exception_name_len(s + last, end - last);
	if (!type_len)
		return false;
	tb = last_line_with(s, last, "Traceback (most recent call last):");
	if (tb == (size_t)-1)
		tb = last_line_with(s, last, "  File \"");
	if (tb == (size_t)-1)
		return false; /* a line that only looks like an exception */
	fill(e, s, tb, last, end, type_len);
	return true;
}

bool hutch_errparse_node(const char *s, size_t n, struct hutch_rt_error *e)
{
	memset(e, 0, sizeof(*e));
	/* the first "    at " frame line, and the error line just above it */
	for (size_t i = 0; i + 7 <= n; i++) {
		if ((i > 0 && s[i - 1] != '\n') || memcmp(s + i, "    at ", 7) != 0 || i == 0)
			continue;
		size_t last = line_start(s, i - 1);
		size_t type_len = exception_name_len(s + last, i - 1 - last);
		if (!type_len)
			return false;
		size_t end = i;
		while (end < n && !(s[end] == '\n' && (end + 1 >= n || s[end + 1] != ' ')))
			end++;
		size_t tb = last;
		size_t where = last_line_with(s, last, "/");
		if (where != (size_t)-1)
			tb = where;
		e->type = hutch_xstrndup(s + last, type_len);
		size_t msg = last + type_len;
		if (msg < i - 1 && s[msg] == ':')
			msg++;
		while (msg < i - 1 && s[msg] == ' ')
			msg++;
		e->message = hutch_xstrndup(s + msg, i - 1 - msg);
		e->traceback = hutch_xstrndup(s + tb, end - tb);
		return true;
	}
	return false;
}
