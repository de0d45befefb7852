#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "util/buf.h"
#include "util/mem.h"

/*
 * The heuristic planner's expected outputs, computed here so that the
 * verifier checks generated code against an independent answer instead of
 * trusting what the code prints. Big numbers are decimal digit strings
 * (least significant digit first while computing): Fibonacci and factorial
 * outgrow 64 bits quickly and Python and JavaScript (BigInt) print them
 * exactly.
 */

#define BIG_DIGITS 4096

struct big {
	unsigned char d[BIG_DIGITS];
	size_t n;
};

static void big_set(struct big *b, unsigned v)
{
	b->n = 0;
	do {
		b->d[b->n++] = (unsigned char)(v % 10);
		v /= 10;
	} while (v);
}

/* a += b; returns -1 past BIG_DIGITS */
static int big_add(struct big *a, const struct big *b)
{
	unsigned carry = 0;
	size_t n = a->n > b->n ? a->n : b->n;

	for (size_t i = 0; i < n || carry; i++) {
		if (i >= BIG_DIGITS)
			return -1;
		unsigned s = carry + (i < a->n ? a->d[i] : 0) + (i < b->n ? b->d[i] : 0);
		a->d[i] = (unsigned char)(s % 10);
		carry = s / 10;
		if (i + 1 > a->n)
			a->n = i + 1;
	}
	return 0;
}

static int big_mul(struct big *a, unsigned m)
{
	unsigned long carry = 0;

	for (size_t i = 0; i < a->n || carry; i++) {
		if (i >= BIG_DIGITS)
			return -1;
		unsigned long p = carry + (unsigned long)(i < a->n ? a->d[i] : 0) * m;
		a->d[i] = (unsigned char)(p % 10);
		carry = p / 10;
		if (i + 1 > a->n)
			a->n = i + 1;
	}
	return 0;
}

static char *big_str(const struct big *b)
{
	char *s = hutch_xmalloc(b->n + 1);

	for (size_t i = 0; i < b->n; i++)
		s[i] = (char)('0' + b->d[b->n - 1 - i]);
	s[b->n] = '\0';
	return s;
}

char *agent_oracle_fib(unsigned n)
{
	struct big *a = hutch_xcalloc(2, sizeof(*a));
	struct big *b = a + 1;
	char *s = NULL;

	big_set(a, 0);
	big_set(b, 1);
	for (unsigned i = 0; i < n; i++) {
		/* (a, b) = (b, a + b), swapping through the sum */
		if (big_add(a, b) < 0)
			goto out;
		struct big t = *a;
		*a = *b;
		*b = t;
	}
	s = big_str(a);
out:
	free(a);
	return s;
}

char *agent_oracle_factorial(unsigned n)
{
	struct big *a = hutch_xcalloc(1, sizeof(*a));
	char *s = NULL;

	big_set(a, 1);
	for (unsigned i = 2; i <= n; i++) {
		if (big_mul(a, i) < 0)
			goto out;
	}
	s = big_str(a);
out:
	free(a);
	return s;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a;
	double y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The first most common value, in order of appearance (Python's mode). */
static double mode_of(const double *v, size_t n)
{
	size_t best = 0;
	double m = v[0];

	for (size_t i = 0; i < n; i++) {
		size_t c = 0;
		for (size_t j = 0; j < n; j++)
			c += v[j] == v[i];
		if (c > best) {
			best = c;
			m = v[i];
		}
	}
	return m;
}

static double stat_of(const char *name, const double *v, const double *sorted, size_t n)
{
	double sum = 0;
	double ss = 0;

	for (size_t i = 0; i < n; i++)
		sum += v[i];
	double mean = sum / (double)n;
	for (size_t i = 0; i < n; i++)
		ss += (v[i] - mean) * (v[i] - mean);
	if (strcmp(name, "sum") == 0)
		return sum;
	if (strcmp(name, "mean") == 0)
		return mean;
	if (strcmp(name, "median") == 0)
		return n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
	if (strcmp(name, "mode") == 0)
		return mode_of(v, n);
	if (strcmp(name, "min") == 0)
		return sorted[0];
	if (strcmp(name, "max") == 0)
		return sorted[n - 1];
	if (strcmp(name, "range") == 0)
		return sorted[n - 1] - sorted[0];
	if (strcmp(name, "variance") == 0)
		return n > 1 ? ss / (double)(n - 1) : NAN;
	return n > 1 ? sqrt(ss / (double)(n - 1)) : NAN; /* stdev: the sample's */
}

char *agent_oracle_stats(const json_t *numbers, const json_t *which)
{
	size_t n = json_array_size(numbers);
	struct hutch_buf out = HUTCH_BUF_INIT;
	double *v;
	double *sorted;
	json_t *e;
	size_t i;

	if (n == 0)
		return NULL;
	v = hutch_xcalloc(2 * n, sizeof(*v));
	sorted = v + n;
	json_array_foreach(numbers, i, e)
	{
		v[i] = json_number_value(e);
	}
	memcpy(sorted, v, n * sizeof(*v));
	qsort(sorted, n, sizeof(*v), cmp_double);
	json_array_foreach(which, i, e)
	{
		const char *name = json_string_value(e);
		hutch_buf_printf(&out, "%s%s: %.2f", i ? "\n" : "", name,
				 stat_of(name, v, sorted, n));
	}
	free(v);
	return hutch_buf_detach(&out, NULL);
}
