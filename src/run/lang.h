/* Languages: how code for each is placed and started. */
#ifndef HUTCH_RUN_LANG_H
#define HUTCH_RUN_LANG_H

struct hutch_lang {
	const char *name;
	const char *interpreter; /* searched in the sandbox's PATH */
	const char *file;	 /* where the code is placed, under /workspace */
};

/* NULL when unknown. */
const struct hutch_lang *hutch_lang_find(const char *name);
/* "python, node, bash, sh" */
const char *hutch_lang_list(void);

#endif
