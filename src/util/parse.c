#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/err.h"
#include "util/parse.h"

/* strtod/strtoull accept leading space, signs and hex: we want none of it. */
static bool starts_like_number(const char *s)
{
	return s && isdigit((unsigned char)s[0]);
}

/* A plain decimal "12" or "1.5" followed by an optional unit suffix. */
static int parse_scaled(const char *s, double *num, const char **suffix, struct hutch_err *err)
{
	char digits[64];
	size_t i = 0;
	bool seen_dot = false;

	if (!starts_like_number(s))
		return hutch_err_setx(err, EINVAL, "'%s' is not a number", s ? s : "");
	while (isdigit((unsigned char)s[i]) || (s[i] == '.' && !seen_dot)) {
		seen_dot |= s[i] == '.';
		i++;
	}
	if (i >= sizeof(digits))
		return hutch_err_setx(err, ERANGE, "'%s' is out of range", s);
	memcpy(digits, s, i);
	digits[i] = '\0';
	errno = 0;
	*num = strtod(digits, NULL);
	if (errno || !isfinite(*num))
		return hutch_err_setx(err, ERANGE, "'%s' is out of range", s);
	*suffix = s + i;
	return 0;
}

int hutch_parse_size(const char *s, uint64_t *out, struct hutch_err *err)
{
	static const char units[] = "KMGT";
	const char *suffix = "";
	double num = 0;
	double scale = 1;

	if (parse_scaled(s, &num, &suffix, err) < 0)
		return -1;
	if (*suffix) {
		const char *u = strchr(units, toupper((unsigned char)*suffix));
		if (u) {
			for (const char *p = units; p <= u; p++)
				scale *= 1024;
			suffix++;
		}
		if (strcasecmp(suffix, "") != 0 && strcasecmp(suffix, "b") != 0 &&
		    strcasecmp(suffix, "ib") != 0)
			return hutch_err_setx(err, EINVAL,
					      "'%s' has an unknown unit (use K, M, G or T)", s);
	}
	num *= scale;
	if (num >= 18446744073709549568.0)
		return hutch_err_setx(err, ERANGE, "'%s' is too large", s);
	*out = (uint64_t)num;
	return 0;
}

int hutch_parse_duration_ms(const char *s, uint64_t *out, struct hutch_err *err)
{
	const char *suffix = "";
	double num = 0;
	double ms;

	if (parse_scaled(s, &num, &suffix, err) < 0)
		return -1;
	if (strcmp(suffix, "") == 0 || strcmp(suffix, "s") == 0)
		ms = num * 1000;
	else if (strcmp(suffix, "ms") == 0)
		ms = num;
	else if (strcmp(suffix, "m") == 0)
		ms = num * 60000;
	else if (strcmp(suffix, "h") == 0)
		ms = num * 3600000;
	else
		return hutch_err_setx(err, EINVAL, "'%s' has an unknown unit (use ms, s, m or h)",
				      s);
	if (ms > 1e15)
		return hutch_err_setx(err, ERANGE, "'%s' is too large", s);
	*out = (uint64_t)ms;
	return 0;
}

int hutch_parse_count(const char *s, uint64_t *out, struct hutch_err *err)
{
	char *end = NULL;
	unsigned long long v;

	if (!starts_like_number(s))
		return hutch_err_setx(err, EINVAL, "'%s' is not a number", s ? s : "");
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return hutch_err_setx(err, ERANGE, "'%s' is out of range", s);
	if (*end)
		return hutch_err_setx(err, EINVAL, "'%s' is not a whole number", s);
	*out = v;
	return 0;
}
