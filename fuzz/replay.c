/* Replay the fuzz corpus through the fuzz targets, built with the normal
 * compiler (crun tests_libcrun_fuzzer.c, SQLite fuzzcheck), and report TAP:
 *
 *	build/fuzz-replay                     every file of fuzz/corpus/<target>/
 *	HUTCH_FUZZ_CORPUS=dir build/fuzz-replay   the same under dir/<target>/
 *	build/fuzz-replay TARGET FILE...      these files through one target
 *
 * Each input runs in a forked child, so a crash (abort() on a broken
 * invariant, a sanitizer report) fails that input, not the run. A missing
 * corpus directory fails too: replaying nothing must not look like success.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fuzz.h"
#include "util/mem.h"

struct target {
	const char *name;
	int (*fn)(const uint8_t *data, size_t size);
};

static const struct target targets[] = {
	{"exec-request", hutch_fuzz_exec_request},   {"path", hutch_fuzz_path},
	{"errparse", hutch_fuzz_errparse},	     {"sni", hutch_fuzz_sni},
	{"proxy-request", hutch_fuzz_proxy_request}, {"mcp-message", hutch_fuzz_mcp_message},
	{"http-request", hutch_fuzz_http_request},   {"agent-message", hutch_fuzz_agent_message},
};

#define NTARGETS (sizeof(targets) / sizeof(targets[0]))

/* One line of the plan: an input file, or a corpus directory that failed. */
struct item {
	const struct target *target;
	char *path;  /* the file to replay */
	char *label; /* "<target>/<file>" */
	char *error; /* why there is nothing to replay, or NULL */
};

struct plan {
	struct item *items;
	size_t n;
};

static void add(struct plan *p, const struct target *t, const char *path, const char *label,
		const char *error)
{
	struct item *it;

	p->items = hutch_xrealloc(p->items, (p->n + 1) * sizeof(*p->items));
	it = &p->items[p->n++];
	it->target = t;
	it->path = hutch_xstrdup(path);
	it->label = hutch_xstrdup(label);
	it->error = error ? hutch_xstrdup(error) : NULL;
}

static int skip_dotfiles(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

static void plan_corpus(struct plan *p, const struct target *t, const char *root)
{
	struct dirent **names = NULL;
	char dir[4096];
	char path[8192];
	char label[512];
	int n;

	snprintf(dir, sizeof(dir), "%s/%s", root, t->name);
	n = scandir(dir, &names, skip_dotfiles, alphasort);
	if (n < 0) {
		snprintf(label, sizeof(label), "%s", t->name);
		snprintf(path, sizeof(path), "cannot read corpus '%s': %s", dir, strerror(errno));
		add(p, t, dir, label, path);
		return;
	}
	if (n == 0)
		add(p, t, dir, t->name, "empty corpus directory");
	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
		snprintf(label, sizeof(label), "%s/%s", t->name, names[i]->d_name);
		add(p, t, path, label, NULL);
		free(names[i]);
	}
	free(names);
}

/* The whole file in a buffer of exactly its size, so a read past the end
 * shows under ASan and valgrind. */
static uint8_t *read_file(const char *path, size_t *len)
{
	struct stat st;
	uint8_t *buf;
	size_t done = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return NULL;
	}
	buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	while (buf && done < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + done, (size_t)st.st_size - done);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) { /* an error, or the file shrank */
			free(buf);
			buf = NULL;
			break;
		}
		done += (size_t)r;
	}
	close(fd);
	*len = done;
	return buf;
}

/* 0 when the target returned normally on this input. */
static int replay(const struct item *it, char *why, size_t why_size)
{
	int status = 0;
	pid_t pid;

	if (it->error) {
		snprintf(why, why_size, "%s", it->error);
		return -1;
	}
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		snprintf(why, why_size, "fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		size_t len = 0;
		uint8_t *data = read_file(it->path, &len);
		if (!data) {
			fprintf(stderr, "# cannot read '%s': %s\n", it->path, strerror(errno));
			_exit(3);
		}
		alarm(60);
		it->target->fn(data, len);
		free(data);
		exit(0);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (WIFSIGNALED(status))
		snprintf(why, why_size, "killed by signal %d (%s)", WTERMSIG(status),
			 strsignal(WTERMSIG(status)));
	else
		snprintf(why, why_size, "exit status %d", WEXITSTATUS(status));
	return -1;
}

static const struct target *find_target(const char *name)
{
	for (size_t i = 0; i < NTARGETS; i++)
		if (strcmp(targets[i].name, name) == 0)
			return &targets[i];
	return NULL;
}

int main(int argc, char **argv)
{
	const char *root = getenv("HUTCH_FUZZ_CORPUS");
	struct plan p = {NULL, 0};
	int failed = 0;

	if (!root || !*root)
		root = "fuzz/corpus";
	if (argc > 1) {
		const struct target *t = find_target(argv[1]);
		if (!t || argc < 3) {
			fprintf(stderr, "usage: %s [TARGET FILE...]; targets:", argv[0]);
			for (size_t i = 0; i < NTARGETS; i++)
				fprintf(stderr, " %s", targets[i].name);
			fputc('\n', stderr);
			return 2;
		}
		for (int i = 2; i < argc; i++)
			add(&p, t, argv[i], argv[i], NULL);
	} else {
		for (size_t i = 0; i < NTARGETS; i++)
			plan_corpus(&p, &targets[i], root);
	}
	printf("1..%zu\n", p.n);
	for (size_t i = 0; i < p.n; i++) {
		char why[512];
		if (replay(&p.items[i], why, sizeof(why)) == 0) {
			printf("ok %zu - %s\n", i + 1, p.items[i].label);
		} else {
			printf("not ok %zu - %s\n# %s\n", i + 1, p.items[i].label, why);
			failed++;
		}
		free(p.items[i].path);
		free(p.items[i].label);
		free(p.items[i].error);
	}
	free(p.items);
	return failed ? 1 : 0;
}
