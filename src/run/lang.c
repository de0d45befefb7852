#include <string.h>

#include "run/lang.h"

/* python3 is /usr/bin/python3 from the template: Debian's interpreter with
 * Debian's packages (numpy, pandas...), never a host pyenv shim. */
static const struct hutch_lang langs[] = {
	{"python", "/usr/bin/python3", "main.py"},
	{"node", "node", "main.js"},
	{"bash", "bash", "main.sh"},
	{"sh", "sh", "main.sh"},
};

const struct hutch_lang *hutch_lang_find(const char *name)
{
	if (!name)
		return NULL;
	if (strcmp(name, "python3") == 0)
		name = "python";
	if (strcmp(name, "javascript") == 0 || strcmp(name, "js") == 0)
		name = "node";
	for (size_t i = 0; i < sizeof(langs) / sizeof(langs[0]); i++)
		if (strcmp(langs[i].name, name) == 0)
			return &langs[i];
	return NULL;
}

const char *hutch_lang_list(void)
{
	return "python, node, bash, sh";
}
