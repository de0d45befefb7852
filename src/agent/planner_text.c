#include <ctype.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "util/buf.h"
#include "util/mem.h"

/*
 * String and regex shapes over the task's quoted text. Answers are computed
 * here only for ASCII text: case mapping and "characters" differ between C,
 * Python and JavaScript beyond it, so non-ASCII text gets a weaker check
 * rather than a wrong expected output.
 */

#define EMAIL_RE "[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\\.[A-Za-z]{2,}"

static bool is_ascii(const char *s)
{
	for (; *s; s++) {
		if ((unsigned char)*s >= 0x80)
			return false;
	}
	return true;
}

static char *mapped(const char *s, int (*f)(int))
{
	char *r = hutch_xstrdup(s);

	for (char *p = r; *p; p++)
		*p = (char)f((unsigned char)*p);
	return r;
}

static char *reversed(const char *s)
{
	size_t n = strlen(s);
	char *r = hutch_xmalloc(n + 1);

	for (size_t i = 0; i < n; i++)
		r[i] = s[n - 1 - i];
	r[n] = '\0';
	return r;
}

static char *palindrome(const char *s)
{
	struct hutch_buf b = HUTCH_BUF_INIT;
	char *norm;
	char *rev;
	bool yes;

	for (; *s; s++) {
		if (isalnum((unsigned char)*s))
			hutch_buf_printf(&b, "%c", tolower((unsigned char)*s));
	}
	norm = hutch_buf_detach(&b, NULL);
	rev = reversed(norm);
	yes = strcmp(norm, rev) == 0;
	free(norm);
	free(rev);
	return hutch_xstrdup(yes ? "palindrome: yes" : "palindrome: no");
}

static char *count_of(const char *s, bool words)
{
	long n = 0;
	bool in = false;

	for (; *s; s++) {
		if (words) {
			bool sp = isspace((unsigned char)*s);
			n += !sp && !in;
			in = !sp;
		} else {
			n += strchr("aeiouAEIOU", *s) != NULL;
		}
	}
	return hutch_xasprintf("%ld", n);
}

static char *emails(const char *s)
{
	struct hutch_buf b = HUTCH_BUF_INIT;
	regex_t re;
	regmatch_t m;

	if (regcomp(&re, EMAIL_RE, REG_EXTENDED) != 0)
		return NULL;
	while (regexec(&re, s, 1, &m, 0) == 0) {
		hutch_buf_printf(&b, "%s%.*s", b.len ? "\n" : "", (int)(m.rm_eo - m.rm_so),
				 s + m.rm_so);
		s += m.rm_eo;
	}
	regfree(&re);
	return hutch_buf_detach(&b, NULL);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *sorted_words(const char *s)
{
	char *copy = hutch_xstrdup(s);
	char *words[256] = {NULL};
	size_t n = 0;
	struct hutch_buf b = HUTCH_BUF_INIT;
	char *save = NULL;

	for (char *t = strtok_r(copy, " \t\n", &save); t && n < 256;
	     t = strtok_r(NULL, " \t\n", &save))
		words[n++] = t;
	qsort(words, n, sizeof(*words), cmp_str);
	for (size_t i = 0; i < n; i++)
		hutch_buf_printf(&b, "%s%s", i ? " " : "", words[i]);
	free(copy);
	return hutch_buf_detach(&b, NULL);
}

struct text_shape {
	const char *keyword;
	const char *shape;
	char *(*answer)(const char *);
	const char *step;
};

static char *upper(const char *s)
{
	return mapped(s, toupper);
}

static char *lower(const char *s)
{
	return mapped(s, tolower);
}

static char *words(const char *s)
{
	return count_of(s, true);
}

static char *vowels(const char *s)
{
	return count_of(s, false);
}

bool agent_plan_text(const char *task, const char *text, struct agent_plan *p)
{
	static const struct text_shape shapes[] = {
		{"email", "extract_emails", emails,
		 "find email addresses with a regex, one a line"},
		{"palindrome", "palindrome", palindrome, "compare the alphanumerics both ways"},
		{"frequenc", "word_freq", NULL, "count each word, most frequent first"},
		{"vowel", "count_vowels", vowels, "count a, e, i, o, u"},
		{"alphabetical", "sort_words", sorted_words, "sort the words"},
		{"sort", "sort_words", sorted_words, "sort the words"},
		{"word", "count_words", words, "split on whitespace and count"},
		{"reverse", "reverse", reversed, "reverse the characters"},
		{"upper", "upper", upper, "map to upper case"},
		{"lower", "lower", lower, "map to lower case"},
		{NULL, NULL, NULL, NULL},
	};
	const struct text_shape *t = shapes;

	/* several shapes say "word": the more specific keywords come first */
	while (t->keyword && !strstr(task, t->keyword))
		t++;
	if (!t->keyword)
		return false;
	p->shape = hutch_xstrdup(t->shape);
	json_object_set_new(p->params, "text", json_string(text));
	json_array_append_new(p->steps, json_string(t->step));
	if (t->answer && is_ascii(text))
		p->expected_output = t->answer(text);
	else
		json_array_append_new(p->checks,
				      json_pack("{s:s, s:s}", "type", "nonempty", "value", ""));
	return true;
}
