/* Unit tests for src/session/files*.c: the host side of the files API.
 *
 * Each case works in a fresh mkdtemp root under /tmp; the attack cases also
 * make an "outside" directory holding files that must survive untouched.
 * Runs as root (CI) and as an unprivileged user. */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <seccomp.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "tap.h"
#include "session/files.h"
#include "util/buf.h"

#define MAX (1u << 20)

static char root_dir[64];
static char outside_dir[64];
static int root_fd = -1;

/* --- fixtures --- */

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		chmod(p, 0700);
	remove(p);
	return 0;
}

static void rm_rf(const char *dir)
{
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void cleanup(void)
{
	if (root_dir[0])
		rm_rf(root_dir);
	if (outside_dir[0])
		rm_rf(outside_dir);
}

/* A fresh root; SKIP when openat2 is missing (the API refuses to work) */
static void setup(void)
{
	struct hutch_err err = {0};
	json_t *j;

	snprintf(root_dir, sizeof(root_dir), "/tmp/hutch-files-XXXXXX");
	ASSERT(mkdtemp(root_dir) != NULL);
	atexit(cleanup);
	root_fd = open(root_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	ASSERT(root_fd >= 0);
	/* list resolves "." with openat2 (valgrind 3.19 does not know it) */
	j = hutch_files_list(root_fd, ".", &err);
	if (!j && err.code == ENOSYS)
		SKIP("openat2 is not available: %s", err.msg);
	ASSERT(j != NULL);
	json_decref(j);
}

static const char *host(const char *rel)
{
	static char p[4][512];
	static int i;

	i = (i + 1) % 4;
	snprintf(p[i], sizeof(p[i]), "%s/%s", root_dir, rel);
	return p[i];
}

static const char *outside(const char *rel)
{
	static char p[4][512];
	static int i;

	i = (i + 1) % 4;
	snprintf(p[i], sizeof(p[i]), "%s/%s", outside_dir, rel);
	return p[i];
}

static void put_host_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	ASSERT(fd >= 0);
	ASSERT_EQ(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

/* The whole file in a static buffer, or NULL */
static const char *host_text(const char *path)
{
	static char buf[8192];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return NULL;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

/* An outside directory with known contents, which attacks aim at */
static void make_outside(void)
{
	snprintf(outside_dir, sizeof(outside_dir), "/tmp/hutch-outside-XXXXXX");
	ASSERT(mkdtemp(outside_dir) != NULL);
	put_host_file(outside("keep"), "keep");
	ASSERT_OK(mkdir(outside("sub"), 0755));
	put_host_file(outside("sub/keep2"), "keep2");
}

static int count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	ASSERT(d != NULL);
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			n++;
	closedir(d);
	return n;
}

static void assert_outside_intact(void)
{
	ASSERT_STREQ(host_text(outside("keep")), "keep");
	ASSERT_STREQ(host_text(outside("sub/keep2")), "keep2");
	ASSERT_EQ(count_entries(outside_dir), 2);
	ASSERT_EQ(count_entries(outside("sub")), 1);
}

static int temp_fd(void)
{
	char tmpl[] = "/tmp/hutch-out-XXXXXX";
	int fd = mkstemp(tmpl);

	ASSERT(fd >= 0);
	unlink(tmpl);
	return fd;
}

static int temps_found;

static int count_temp(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	if (strncmp(p + ftw->base, ".hutch-tmp-", 11) == 0)
		temps_found++;
	return 0;
}

static int temp_files(void)
{
	temps_found = 0;
	nftw(root_dir, count_temp, 16, FTW_PHYS);
	return temps_found;
}

static void write_text(const char *path, const char *text)
{
	struct hutch_err err = {0};

	if (hutch_files_write(root_fd, path, text, strlen(text), NULL, MAX, &err) != 0)
		TAP_FAIL("write '%s': %s", path, err.msg);
}

/* read path whole, as text; NULL (err filled) on failure */
static const char *read_text(const char *path, struct hutch_err *err)
{
	static struct hutch_buf b;

	hutch_buf_release(&b);
	if (hutch_files_read(root_fd, path, 0, 0, MAX, &b, err) != 0)
		return NULL;
	hutch_buf_append(&b, "", 0);
	return b.data;
}

static ino_t host_ino(const char *path)
{
	struct stat st;

	ASSERT_OK(lstat(path, &st));
	return st.st_ino;
}

static const char *jstr(json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/* --- writes and reads --- */

static void test_files_write_read_binary_round_trip(void)
{
	struct hutch_err err = {0};
	struct hutch_buf b = HUTCH_BUF_INIT;
	unsigned char data[300];

	setup();
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (unsigned char)(i * 7);
	data[5] = data[100] = 0;
	ASSERT_OK(hutch_files_write(root_fd, "bin", data, sizeof(data), NULL, MAX, &err));
	hutch_buf_puts(&b, "prefix");
	ASSERT_OK(hutch_files_read(root_fd, "bin", 0, 0, MAX, &b, &err));
	ASSERT_EQ(b.len, 6 + sizeof(data));
	ASSERT(memcmp(b.data + 6, data, sizeof(data)) == 0);
	ASSERT_EQ(b.data[b.len], '\0');
	hutch_buf_release(&b);

	/* ranges: inside, cut at the end, past the end */
	ASSERT_OK(hutch_files_read(root_fd, "/workspace/bin", 10, 20, MAX, &b, &err));
	ASSERT_EQ(b.len, 20);
	ASSERT(memcmp(b.data, data + 10, 20) == 0);
	hutch_buf_release(&b);
	ASSERT_OK(hutch_files_read(root_fd, "bin", 290, 100, MAX, &b, &err));
	ASSERT_EQ(b.len, 10);
	ASSERT(memcmp(b.data, data + 290, 10) == 0);
	hutch_buf_release(&b);
	ASSERT_OK(hutch_files_read(root_fd, "bin", 1000, 0, MAX, &b, &err));
	ASSERT_EQ(b.len, 0);

	/* max_bytes applies to the range asked for */
	ASSERT_ERR(hutch_files_read(root_fd, "bin", 0, 0, 299, &b, &err), err, EFBIG);
	ASSERT_CONTAINS(err.msg, "299");
	ASSERT_OK(hutch_files_read(root_fd, "bin", 0, 299, 299, &b, &err));
	ASSERT_EQ(b.len, 299);
	hutch_buf_release(&b);
}

static void test_files_write_empty_file(void)
{
	struct hutch_err err = {0};
	struct hutch_buf b = HUTCH_BUF_INIT;
	struct stat st;

	setup();
	ASSERT_OK(hutch_files_write(root_fd, "empty", NULL, 0, NULL, 0, &err));
	ASSERT_OK(hutch_files_read(root_fd, "empty", 0, 0, 0, &b, &err));
	ASSERT_EQ(b.len, 0);
	ASSERT_OK(stat(host("empty"), &st));
	ASSERT(S_ISREG(st.st_mode));
	ASSERT_EQ(st.st_size, 0);
	ASSERT_EQ(st.st_mode & 07777, 0644);
}

static void test_files_write_creates_parents(void)
{
	struct hutch_err err = {0};
	struct stat st;

	setup();
	write_text("a/b/c/f.txt", "deep");
	write_text("/workspace/x/y.txt", "abs");
	ASSERT_STREQ(host_text(host("a/b/c/f.txt")), "deep");
	ASSERT_STREQ(host_text(host("x/y.txt")), "abs");
	ASSERT_OK(stat(host("a/b"), &st));
	ASSERT(S_ISDIR(st.st_mode));
	ASSERT_EQ(st.st_mode & 07777, 0755);
	/* a parent that is a file */
	ASSERT_ERR(hutch_files_write(root_fd, "a/b/c/f.txt/g", "x", 1, NULL, MAX, &err), err,
		   ENOTDIR);
}

static void test_files_write_replaces_atomically(void)
{
	struct hutch_err err = {0};
	ino_t before;

	setup();
	write_text("f", "one");
	before = host_ino(host("f"));
	write_text("f", "two");
	ASSERT_STREQ(host_text(host("f")), "two");
	ASSERT_NE(host_ino(host("f")), before); /* a new file renamed in */
	ASSERT_EQ(temp_files(), 0);

	/* over the limit: nothing happens, the target stays */
	ASSERT_ERR(hutch_files_write(root_fd, "f", "three", 5, NULL, 4, &err), err, EFBIG);
	ASSERT_CONTAINS(err.msg, "4 bytes");
	ASSERT_ERR(hutch_files_write(root_fd, "new/g", "three", 5, NULL, 4, &err), err, EFBIG);
	ASSERT_STREQ(host_text(host("f")), "two");
	ASSERT(access(host("new"), F_OK) != 0);
	ASSERT_EQ(temp_files(), 0);

	/* a directory is not replaced */
	ASSERT_OK(mkdir(host("dir"), 0755));
	ASSERT_ERR(hutch_files_write(root_fd, "dir", "x", 1, NULL, MAX, &err), err, EISDIR);
	ASSERT_ERR(hutch_files_write(root_fd, ".", "x", 1, NULL, MAX, &err), err, EINVAL);
	ASSERT_ERR(hutch_files_write(root_fd, "/workspace", "x", 1, NULL, MAX, &err), err, EINVAL);
	ASSERT_EQ(temp_files(), 0);
}

static void test_files_write_fd_copies_with_cap(void)
{
	struct hutch_err err = {0};
	struct hutch_buf b = HUTCH_BUF_INIT;
	char tmpl[] = "/tmp/hutch-src-XXXXXX";
	int fd = mkstemp(tmpl);
	char block[1000];

	ASSERT(fd >= 0);
	unlink(tmpl);
	setup();
	for (int i = 0; i < 200; i++) {
		memset(block, 'a' + i % 26, sizeof(block));
		ASSERT_EQ(write(fd, block, sizeof(block)), (ssize_t)sizeof(block));
	}
	ASSERT_EQ(lseek(fd, 0, SEEK_SET), 0);
	ASSERT_OK(hutch_files_write_fd(root_fd, "up/load", fd, NULL, 200000, &err));
	ASSERT_OK(hutch_files_read(root_fd, "up/load", 0, 0, MAX, &b, &err));
	ASSERT_EQ(b.len, 200000);
	ASSERT_EQ(b.data[199999], 'a' + 199 % 26);
	hutch_buf_release(&b);

	/* one byte over: EFBIG, old content kept, no temp file */
	ASSERT_EQ(lseek(fd, 0, SEEK_SET), 0);
	ASSERT_ERR(hutch_files_write_fd(root_fd, "up/load2", fd, NULL, 199999, &err), err, EFBIG);
	ASSERT(access(host("up/load2"), F_OK) != 0);
	ASSERT_EQ(lseek(fd, 0, SEEK_SET), 0);
	write_text("up/load", "old");
	ASSERT_ERR(hutch_files_write_fd(root_fd, "up/load", fd, NULL, 1000, &err), err, EFBIG);
	ASSERT_STREQ(host_text(host("up/load")), "old");
	ASSERT_EQ(temp_files(), 0);
	close(fd);
}

static void test_files_write_owner_and_mode(void)
{
	struct hutch_files_owner me = {getuid(), getgid(), 0600};
	struct hutch_files_owner other = {1234, 5678, 0};
	struct hutch_err err = {0};
	struct stat st;

	setup();
	ASSERT_OK(hutch_files_write(root_fd, "mine", "x", 1, &me, MAX, &err));
	ASSERT_OK(stat(host("mine"), &st));
	ASSERT_EQ(st.st_mode & 07777, 0600);
	/* the mode is masked: never setuid */
	me.mode = 04755;
	ASSERT_OK(hutch_files_write(root_fd, "mine", "x", 1, &me, MAX, &err));
	ASSERT_OK(stat(host("mine"), &st));
	ASSERT_EQ(st.st_mode & 07777, 0755);
	if (geteuid() != 0) {
		/* we cannot give files away: a clear error, nothing left */
		ASSERT_ERR(hutch_files_write(root_fd, "theirs", "x", 1, &other, MAX, &err), err,
			   EPERM);
		ASSERT(access(host("theirs"), F_OK) != 0);
		ASSERT_EQ(temp_files(), 0);
		return;
	}
	ASSERT_OK(hutch_files_write(root_fd, "new/dir/theirs", "x", 1, &other, MAX, &err));
	ASSERT_OK(stat(host("new/dir/theirs"), &st));
	ASSERT_EQ(st.st_uid, 1234);
	ASSERT_EQ(st.st_gid, 5678);
	ASSERT_OK(stat(host("new"), &st));
	ASSERT_EQ(st.st_uid, 1234);
	ASSERT_OK(hutch_files_mkdir(root_fd, "m/n", &other, &err));
	ASSERT_OK(stat(host("m/n"), &st));
	ASSERT_EQ(st.st_gid, 5678);
}

/* --- list, stat, mkdir, remove, move, usage --- */

static void make_socket(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ASSERT(s >= 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	ASSERT_OK(bind(s, (struct sockaddr *)&sa, sizeof(sa)));
	close(s);
}

static void test_files_list_types_sorted(void)
{
	struct hutch_err err = {0};
	const char *want[][3] = {{"a-file", "file", "0640"},
				 {"b-dir", "dir", "0750"},
				 {"c-link", "symlink", "0777"},
				 {"d-fifo", "fifo", "0600"},
				 {"e-sock", "socket", NULL}};
	json_t *arr;

	setup();
	write_text("a-file", "12345");
	ASSERT_OK(chmod(host("a-file"), 0640));
	ASSERT_OK(mkdir(host("b-dir"), 0750));
	ASSERT_OK(chmod(host("b-dir"), 0750));
	ASSERT_OK(symlink("b-dir", host("c-link")));
	ASSERT_OK(mkfifo(host("d-fifo"), 0600));
	ASSERT_OK(chmod(host("d-fifo"), 0600));
	make_socket(host("e-sock"));

	for (int pass = 0; pass < 2; pass++) {
		arr = hutch_files_list(root_fd, pass ? "/workspace" : ".", &err);
		ASSERT(arr != NULL);
		ASSERT_EQ(json_array_size(arr), 5);
		for (size_t i = 0; i < 5; i++) {
			json_t *o = json_array_get(arr, i);
			ASSERT_STREQ(jstr(o, "name"), want[i][0]);
			ASSERT_STREQ(jstr(o, "type"), want[i][1]);
			if (want[i][2])
				ASSERT_STREQ(jstr(o, "mode"), want[i][2]);
			ASSERT(json_is_integer(json_object_get(o, "mtime")));
			ASSERT(json_integer_value(json_object_get(o, "mtime")) > 1600000000);
		}
		ASSERT_EQ(json_integer_value(json_object_get(json_array_get(arr, 0), "size")), 5);
		ASSERT_STREQ(jstr(json_array_get(arr, 2), "target"), "b-dir");
		ASSERT(json_object_get(json_array_get(arr, 0), "target") == NULL);
		json_decref(arr);
	}
	/* not directories, and a symlink to one is not followed */
	ASSERT(hutch_files_list(root_fd, "a-file", &err) == NULL);
	ASSERT_EQ(err.code, ENOTDIR);
	ASSERT(hutch_files_list(root_fd, "c-link", &err) == NULL);
	ASSERT_EQ(err.code, ENOTDIR);
	ASSERT(hutch_files_list(root_fd, "missing", &err) == NULL);
	ASSERT_EQ(err.code, ENOENT);
	arr = hutch_files_list(root_fd, "b-dir", &err);
	ASSERT_EQ(json_array_size(arr), 0);
	json_decref(arr);
}

static void test_files_list_non_utf8_names(void)
{
	struct hutch_err err = {0};
	json_t *arr;

	setup();
	write_text("caf\xc3\xa9", "ok");
	write_text("bad\xff", "x");
	arr = hutch_files_list(root_fd, ".", &err);
	ASSERT_EQ(json_array_size(arr), 2);
	ASSERT_STREQ(jstr(json_array_get(arr, 0), "name"), "bad\xef\xbf\xbd");
	ASSERT_STREQ(jstr(json_array_get(arr, 1), "name"), "caf\xc3\xa9");
	json_decref(arr);
}

static void test_files_stat_normalises_the_name(void)
{
	struct hutch_err err = {0};
	const char *cases[][2] = {{"a//b/./c", "a/b/c"},
				  {"./a/b/c/", "a/b/c"},
				  {"/workspace/a/b/c", "/workspace/a/b/c"},
				  {"/workspace//a/b/c", "/workspace/a/b/c"},
				  {".", "."},
				  {"/workspace", "/workspace"},
				  {"/workspace/", "/workspace"}};
	json_t *o;

	setup();
	write_text("a/b/c", "xyz");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		o = hutch_files_stat(root_fd, cases[i][0], &err);
		if (!o)
			TAP_FAIL("stat '%s': %s", cases[i][0], err.msg);
		ASSERT_STREQ(jstr(o, "name"), cases[i][1]);
		json_decref(o);
	}
	o = hutch_files_stat(root_fd, "a/b/c", &err);
	ASSERT_STREQ(jstr(o, "type"), "file");
	ASSERT_EQ(json_integer_value(json_object_get(o, "size")), 3);
	json_decref(o);
	o = hutch_files_stat(root_fd, ".", &err);
	ASSERT_STREQ(jstr(o, "type"), "dir");
	json_decref(o);
	/* lstat semantics */
	ASSERT_OK(symlink("/nowhere", host("dangling")));
	o = hutch_files_stat(root_fd, "dangling", &err);
	ASSERT_STREQ(jstr(o, "type"), "symlink");
	ASSERT_STREQ(jstr(o, "target"), "/nowhere");
	json_decref(o);
	ASSERT(hutch_files_stat(root_fd, "nope", &err) == NULL);
	ASSERT_EQ(err.code, ENOENT);
	ASSERT(hutch_files_stat(root_fd, "nope/deeper", &err) == NULL);
	ASSERT_EQ(err.code, ENOENT);
}

static void test_files_mkdir_p(void)
{
	struct hutch_err err = {0};
	struct stat st;

	setup();
	ASSERT_OK(hutch_files_mkdir(root_fd, "x/y/z", NULL, &err));
	ASSERT_OK(stat(host("x/y/z"), &st));
	ASSERT(S_ISDIR(st.st_mode));
	ASSERT_OK(hutch_files_mkdir(root_fd, "x/y/z", NULL, &err));
	ASSERT_OK(hutch_files_mkdir(root_fd, "/workspace/x", NULL, &err));
	ASSERT_OK(hutch_files_mkdir(root_fd, ".", NULL, &err));
	write_text("x/file", "f");
	ASSERT_ERR(hutch_files_mkdir(root_fd, "x/file", NULL, &err), err, EEXIST);
	ASSERT_ERR(hutch_files_mkdir(root_fd, "x/file/sub", NULL, &err), err, ENOTDIR);
	/* a symlink to a directory inside is a directory here, as for mkdir -p */
	ASSERT_OK(symlink("x/y", host("ly")));
	ASSERT_OK(hutch_files_mkdir(root_fd, "ly/new", NULL, &err));
	ASSERT_OK(stat(host("x/y/new"), &st));
}

static void test_files_remove_entries(void)
{
	struct hutch_err err = {0};

	setup();
	make_outside();
	write_text("f", "x");
	ASSERT_OK(hutch_files_remove(root_fd, "f", false, &err));
	ASSERT(access(host("f"), F_OK) != 0);
	ASSERT_ERR(hutch_files_remove(root_fd, "f", false, &err), err, ENOENT);
	ASSERT_ERR(hutch_files_remove(root_fd, "nodir/f", true, &err), err, ENOENT);

	/* a symlink goes, its target stays */
	ASSERT_OK(symlink(outside("keep"), host("lk")));
	ASSERT_OK(symlink(outside_dir, host("ldir")));
	ASSERT_OK(hutch_files_remove(root_fd, "lk", false, &err));
	ASSERT_OK(hutch_files_remove(root_fd, "ldir", true, &err));
	ASSERT(access(host("ldir"), F_OK) != 0);

	ASSERT_OK(mkfifo(host("ff"), 0600));
	ASSERT_OK(hutch_files_remove(root_fd, "ff", false, &err));

	/* directories: empty, or recursive */
	write_text("t/a/b/c", "x");
	write_text("t/a/d", "x");
	ASSERT_OK(symlink(outside_dir, host("t/a/out")));
	ASSERT_OK(symlink("../../..", host("t/a/up")));
	ASSERT_OK(mkdir(host("t/e"), 0755));
	ASSERT_OK(hutch_files_remove(root_fd, "t/e", false, &err));
	ASSERT_ERR(hutch_files_remove(root_fd, "t", false, &err), err, ENOTEMPTY);
	ASSERT_CONTAINS(err.msg, "recursive");
	ASSERT_OK(hutch_files_remove(root_fd, "/workspace/t", true, &err));
	ASSERT(access(host("t"), F_OK) != 0);
	assert_outside_intact();

	ASSERT_ERR(hutch_files_remove(root_fd, ".", true, &err), err, EINVAL);
	ASSERT_ERR(hutch_files_remove(root_fd, "/workspace", true, &err), err, EINVAL);
	ASSERT_ERR(hutch_files_remove(root_fd, "/workspace/", true, &err), err, EINVAL);
	ASSERT_EQ(access(root_dir, F_OK), 0);
}

/* Closed directory modes (code in the sandbox can chmod 0) do not stop a
 * recursive remove, root or not. */
static void test_files_remove_closed_directories(void)
{
	struct hutch_err err = {0};

	setup();
	write_text("t/locked/inner/f", "x");
	ASSERT_OK(chmod(host("t/locked/inner"), 0));
	ASSERT_OK(chmod(host("t/locked"), 0500));
	ASSERT_OK(hutch_files_remove(root_fd, "t", true, &err));
	ASSERT(access(host("t"), F_OK) != 0);
}

/* A tree far deeper than the fds we may hold: the walks climb with ".."
 * and keep two fds at most. */
static void test_files_deep_tree_with_few_fds(void)
{
	struct rlimit rl = {48, 48};
	struct hutch_err err = {0};
	uint64_t bytes = 0;
	uint64_t inodes = 0;
	int fd;
	int next;

	setup();
	fd = open(root_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	for (int i = 0; i < 1500; i++) {
		ASSERT_OK(mkdirat(fd, "d", 0755));
		next = openat(fd, "d", O_PATH | O_DIRECTORY | O_CLOEXEC);
		ASSERT(next >= 0);
		if (i % 100 == 0)
			close(openat(next, "f", O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
		close(fd);
		fd = next;
	}
	close(fd);
	ASSERT_OK(setrlimit(RLIMIT_NOFILE, &rl));
	ASSERT_OK(hutch_files_usage(root_fd, &bytes, &inodes, &err));
	ASSERT_EQ(inodes, 1 + 1500 + 15);
	ASSERT_OK(hutch_files_remove(root_fd, "d", true, &err));
	ASSERT_EQ(count_entries(root_dir), 0);
}

static void test_files_move(void)
{
	struct hutch_err err = {0};

	setup();
	make_outside();
	write_text("a", "A");
	write_text("b", "B");
	ASSERT_OK(hutch_files_move(root_fd, "a", "c", false, &err));
	ASSERT_STREQ(host_text(host("c")), "A");
	ASSERT_ERR(hutch_files_move(root_fd, "c", "b", false, &err), err, EEXIST);
	ASSERT_STREQ(host_text(host("b")), "B");
	ASSERT_OK(hutch_files_move(root_fd, "c", "/workspace/b", true, &err));
	ASSERT_STREQ(host_text(host("b")), "A");
	ASSERT_ERR(hutch_files_move(root_fd, "nope", "x", false, &err), err, ENOENT);
	ASSERT_ERR(hutch_files_move(root_fd, "b", "no/dir/x", false, &err), err, ENOENT);
	ASSERT_ERR(hutch_files_move(root_fd, ".", "x", false, &err), err, EINVAL);
	ASSERT_ERR(hutch_files_move(root_fd, "b", "/workspace", true, &err), err, EINVAL);
	ASSERT_ERR(hutch_files_move(root_fd, "b", "../b", true, &err), err, EINVAL);
	/* a symlink is moved, not its target; a link's parent path is in-root */
	ASSERT_OK(symlink(outside("keep"), host("lk")));
	ASSERT_OK(hutch_files_move(root_fd, "lk", "lk2", false, &err));
	ASSERT_OK(symlink(outside_dir, host("ldir")));
	ASSERT_ERR(hutch_files_move(root_fd, "b", "ldir/b", true, &err), err, ENOENT);
	ASSERT_ERR(hutch_files_move(root_fd, "ldir/keep", "stolen", true, &err), err, ENOENT);
	assert_outside_intact();
}

static void test_files_usage_counts_blocks_once(void)
{
	struct hutch_err err = {0};
	static char big[100000];
	uint64_t b0;
	uint64_t i0;
	uint64_t b1;
	uint64_t i1;
	uint64_t b2;
	uint64_t i2;

	setup();
	make_outside();
	ASSERT_OK(hutch_files_usage(root_fd, &b0, &i0, &err));
	ASSERT_EQ(i0, 1);
	memset(big, 'x', sizeof(big));
	ASSERT_OK(hutch_files_write(root_fd, "d/big", big, sizeof(big), NULL, MAX, &err));
	ASSERT_OK(hutch_files_usage(root_fd, &b1, &i1, &err));
	ASSERT(b1 >= b0 + sizeof(big));
	ASSERT_EQ(i1, 3);
	/* a hard link adds a name, not blocks; a symlink outside is not followed */
	ASSERT_OK(link(host("d/big"), host("hard")));
	ASSERT_OK(symlink(outside_dir, host("out")));
	ASSERT_OK(hutch_files_usage(root_fd, &b2, &i2, &err));
	ASSERT_EQ(i2, 4);
	ASSERT(b2 - b1 < 8192); /* the symlink's own blocks at most */
	/* err may be NULL (the session manager passes NULL) */
	ASSERT_OK(hutch_files_usage(root_fd, &b2, &i2, NULL));
}

/* --- attacks --- */

static void test_files_rejects_bad_paths(void)
{
	const char *bad[] = {"../x",
			     "a/../../x",
			     "/etc/passwd",
			     "/workspace/../etc/passwd",
			     "/workspacex/a",
			     "//workspace/a",
			     "/",
			     "..",
			     "a/..",
			     ""};
	struct hutch_err err = {0};
	struct hutch_buf b = HUTCH_BUF_INIT;
	char pwned[64];

	setup();
	snprintf(pwned, sizeof(pwned), "../hutch-pwned-%d", (int)getpid());
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *p = bad[i];
		ASSERT_ERR(hutch_files_write(root_fd, p, "x", 1, NULL, MAX, &err), err, EINVAL);
		ASSERT(err.msg[0] != '\0');
		ASSERT_ERR(hutch_files_read(root_fd, p, 0, 0, MAX, &b, &err), err, EINVAL);
		ASSERT(hutch_files_list(root_fd, p, &err) == NULL);
		ASSERT_EQ(err.code, EINVAL);
		ASSERT(hutch_files_stat(root_fd, p, &err) == NULL);
		ASSERT_EQ(err.code, EINVAL);
		ASSERT_ERR(hutch_files_mkdir(root_fd, p, NULL, &err), err, EINVAL);
		ASSERT_ERR(hutch_files_remove(root_fd, p, true, &err), err, EINVAL);
		ASSERT_ERR(hutch_files_move(root_fd, "x", p, true, &err), err, EINVAL);
		ASSERT_ERR(hutch_files_tar_out(root_fd, p, -1, &err), err, EINVAL);
	}
	ASSERT_ERR(hutch_files_write(root_fd, NULL, "x", 1, NULL, MAX, &err), err, EINVAL);
	ASSERT_ERR(hutch_files_write(root_fd, "/etc/passwd", "x", 1, NULL, MAX, &err), err, EINVAL);
	ASSERT_CONTAINS(err.msg, "/etc/passwd");
	ASSERT_CONTAINS(err.msg, "outside");
	ASSERT_ERR(hutch_files_write(root_fd, pwned, "x", 1, NULL, MAX, &err), err, EINVAL);
	ASSERT_CONTAINS(err.msg, "..");
	ASSERT(access(host(pwned), F_OK) != 0);
	ASSERT_EQ(count_entries(root_dir), 0);
}

static void test_files_symlink_to_etc_stays_inside(void)
{
	struct hutch_err err = {0};
	char name[64];
	char etc_name[80];
	char via[96];
	char inside[96];
	const char *got;

	setup();
	snprintf(name, sizeof(name), "hutch-pwned-%d", (int)getpid());
	snprintf(etc_name, sizeof(etc_name), "/etc/%s", name);
	snprintf(via, sizeof(via), "link/%s", name);
	snprintf(inside, sizeof(inside), "etc/%s", name);
	ASSERT_OK(symlink("/etc", host("link")));

	/* resolves to <root>/etc, which does not exist: fails, writes nothing */
	(void)hutch_files_write(root_fd, via, "x", 1, NULL, MAX, &err);
	ASSERT(access(etc_name, F_OK) != 0);
	(void)hutch_files_mkdir(root_fd, via, NULL, &err);
	ASSERT(access(etc_name, F_OK) != 0);
	got = read_text("link/passwd", &err);
	ASSERT(got == NULL);
	ASSERT_EQ(err.code, ENOENT);
	ASSERT(hutch_files_list(root_fd, "link", &err) == NULL);

	/* with a <root>/etc, the same paths land inside */
	ASSERT_OK(mkdir(host("etc"), 0755));
	put_host_file(host("etc/passwd"), "inside\n");
	ASSERT_STREQ(read_text("link/passwd", &err), "inside\n");
	write_text(via, "in");
	ASSERT_STREQ(host_text(host(inside)), "in");
	ASSERT(access(etc_name, F_OK) != 0);
}

static void test_files_symlink_up_and_absolute_resolve_in_root(void)
{
	struct hutch_err err = {0};
	char name[64];
	char slash_name[80];
	char tmp_name[96];
	char via[96];

	setup();
	snprintf(name, sizeof(name), "hutch-pwned-%d", (int)getpid());
	snprintf(slash_name, sizeof(slash_name), "/%s", name);
	snprintf(tmp_name, sizeof(tmp_name), "/tmp/%s", name);
	snprintf(via, sizeof(via), "up/%s", name);
	ASSERT_OK(symlink("../../..", host("up")));
	/* "../../.." from the root is the root */
	write_text(via, "x");
	ASSERT_STREQ(host_text(host(name)), "x");
	ASSERT(access(slash_name, F_OK) != 0);
	ASSERT(access(tmp_name, F_OK) != 0);

	/* "/etc/hostname" inside the root means <root>/etc/hostname */
	ASSERT_OK(mkdir(host("etc"), 0755));
	put_host_file(host("etc/hostname"), "inside");
	ASSERT_OK(symlink("/etc", host("etcl")));
	ASSERT_STREQ(read_text("etcl/hostname", &err), "inside");
	ASSERT_STREQ(read_text("up/etc/hostname", &err), "inside");
	write_text("etcl/new", "n");
	ASSERT_STREQ(host_text(host("etc/new")), "n");
}

static void test_files_symlink_last_component_not_followed(void)
{
	struct hutch_err err = {0};
	struct stat st;

	setup();
	make_outside();
	/* read: never follows, whether the target is outside or not */
	ASSERT_OK(symlink("/etc/hostname", host("hn")));
	ASSERT(read_text("hn", &err) == NULL);
	ASSERT_EQ(err.code, ELOOP);
	ASSERT_OK(symlink(outside("keep"), host("lk")));
	ASSERT(read_text("lk", &err) == NULL);
	ASSERT_EQ(err.code, ELOOP);
	/* write: replaces the link itself */
	write_text("lk", "mine");
	assert_outside_intact();
	ASSERT_OK(lstat(host("lk"), &st));
	ASSERT(S_ISREG(st.st_mode));
	ASSERT_STREQ(host_text(host("lk")), "mine");
	/* and a link to a directory outside is not written through */
	ASSERT_OK(symlink(outside_dir, host("ldir")));
	(void)hutch_files_write(root_fd, "ldir/keep", "x", 1, NULL, MAX, &err);
	(void)hutch_files_write(root_fd, "ldir/new", "x", 1, NULL, MAX, &err);
	(void)hutch_files_mkdir(root_fd, "ldir/newdir", NULL, &err);
	(void)hutch_files_remove(root_fd, "ldir/keep", false, &err);
	(void)hutch_files_remove(root_fd, "ldir/sub", true, &err);
	assert_outside_intact();
}

static void test_files_fifo_and_socket_do_not_hang(void)
{
	struct hutch_err err = {0};
	struct hutch_buf b = HUTCH_BUF_INIT;
	int out;

	setup();
	ASSERT_OK(mkfifo(host("ff"), 0644));
	make_socket(host("sk"));
	alarm(5); /* a blocking open would end the case here */
	ASSERT_ERR(hutch_files_read(root_fd, "ff", 0, 0, MAX, &b, &err), err, EINVAL);
	ASSERT_CONTAINS(err.msg, "not a regular file");
	ASSERT_ERR(hutch_files_read(root_fd, "sk", 0, 0, MAX, &b, &err), err, EINVAL);
	ASSERT_ERR(hutch_files_read(root_fd, ".", 0, 0, MAX, &b, &err), err, EISDIR);
	/* tar leaves them out, without opening them */
	out = open("/dev/null", O_WRONLY | O_CLOEXEC);
	ASSERT_OK(hutch_files_tar_out(root_fd, ".", out, &err));
	close(out);
	/* write replaces a fifo rather than opening it */
	write_text("ff", "now a file");
	ASSERT_STREQ(read_text("ff", &err), "now a file");
	alarm(0);
}

static void test_files_magic_links_stay_inside(void)
{
	struct hutch_err err = {0};
	char fdlink[64];
	int fd;

	setup();
	make_outside();
	ASSERT_OK(symlink("/proc/self/root", host("p")));
	ASSERT(read_text("p/etc/passwd", &err) == NULL);
	ASSERT_EQ(err.code, ENOENT);
	(void)hutch_files_write(root_fd, "p/tmp/x", "x", 1, NULL, MAX, &err);
	ASSERT(hutch_files_list(root_fd, "p", &err) == NULL);
	/* an fd of the outside dir, reachable through /proc/self/fd/N */
	fd = open(outside_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	snprintf(fdlink, sizeof(fdlink), "/proc/self/fd/%d", fd);
	ASSERT_OK(symlink(fdlink, host("fdl")));
	ASSERT(read_text("fdl/keep", &err) == NULL);
	(void)hutch_files_write(root_fd, "fdl/new", "x", 1, NULL, MAX, &err);
	(void)hutch_files_remove(root_fd, "fdl/sub", true, &err);
	ASSERT_OK(symlink("/proc/self/cwd", host("cwd")));
	ASSERT(read_text("cwd/etc/passwd", &err) == NULL);
	close(fd);
	assert_outside_intact();
	/* <root>/proc is an ordinary directory if anything: never procfs */
	ASSERT(access(host("proc"), F_OK) != 0 || access(host("proc/self"), F_OK) != 0);
}

/* Without openat2 (old kernel, or a seccomp filter answering ENOSYS as
 * container runtimes do) every call fails clearly: no unsafe fallback. */
static void test_files_without_openat2_fails_closed(void)
{
	struct hutch_err err = {0};
	struct hutch_buf b = HUTCH_BUF_INIT;
	scmp_filter_ctx ctx;
	int fd = temp_fd();

	setup();
	write_text("f", "x");
	ctx = seccomp_init(SCMP_ACT_ALLOW);
	ASSERT(ctx != NULL);
	ASSERT_OK(seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(openat2), 0));
	ASSERT_OK(seccomp_load(ctx));
	seccomp_release(ctx);

	ASSERT_ERR(hutch_files_write(root_fd, "g", "x", 1, NULL, MAX, &err), err, ENOSYS);
	ASSERT_CONTAINS(err.msg, "openat2");
	ASSERT_ERR(hutch_files_write(root_fd, "d/g", "x", 1, NULL, MAX, &err), err, ENOSYS);
	ASSERT_ERR(hutch_files_read(root_fd, "f", 0, 0, MAX, &b, &err), err, ENOSYS);
	ASSERT(hutch_files_list(root_fd, ".", &err) == NULL);
	ASSERT_EQ(err.code, ENOSYS);
	ASSERT(hutch_files_stat(root_fd, "f", &err) == NULL);
	ASSERT_EQ(err.code, ENOSYS);
	ASSERT_ERR(hutch_files_mkdir(root_fd, "d", NULL, &err), err, ENOSYS);
	ASSERT_ERR(hutch_files_remove(root_fd, "f", false, &err), err, ENOSYS);
	ASSERT_ERR(hutch_files_move(root_fd, "f", "h", false, &err), err, ENOSYS);
	ASSERT_ERR(hutch_files_tar_out(root_fd, "f", fd, &err), err, ENOSYS);
	ASSERT_ERR(hutch_files_tar_in(root_fd, "d", fd, NULL, MAX, &err), err, ENOSYS);
	ASSERT_EQ(count_entries(root_dir), 1);
	close(fd);
}

/* --- races --- */

struct racer {
	atomic_int stop;
	int fd; /* the root */
	const char *a;
	const char *b;
	char target[128];
};

/* Make `name` a directory, or a symlink to r->target. Failures are fine:
 * the racer repairs again on its next turn. */
static void make_node(struct racer *r, const char *name, bool dir)
{
	int rc = dir ? mkdirat(r->fd, name, 0755) : symlinkat(r->target, r->fd, name);

	(void)rc;
}

/* Whichever of a and b is missing (our remove took it) comes back as the
 * opposite of the other, so there is always a directory to swap with a
 * symlink. */
static void repair(struct racer *r)
{
	struct stat sa;
	struct stat sb;
	bool has_a = fstatat(r->fd, r->a, &sa, AT_SYMLINK_NOFOLLOW) == 0;
	bool has_b = fstatat(r->fd, r->b, &sb, AT_SYMLINK_NOFOLLOW) == 0;

	if (!has_a && !has_b) {
		make_node(r, r->a, true);
		make_node(r, r->b, false);
	} else if (!has_a) {
		make_node(r, r->a, S_ISLNK(sb.st_mode));
	} else if (!has_b) {
		make_node(r, r->b, S_ISLNK(sa.st_mode));
	}
}

/* Swap a directory and a symlink to outside as fast as possible */
static void *swap_loop(void *arg)
{
	struct racer *r = arg;

	while (!atomic_load(&r->stop))
		if (renameat2(r->fd, r->a, r->fd, r->b, RENAME_EXCHANGE) < 0)
			repair(r);
	return NULL;
}

static void test_files_race_swap_dir_for_symlink(void)
{
	struct racer r = {.a = "d", .b = "s"};
	struct hutch_err err = {0};
	struct hutch_buf b = HUTCH_BUF_INIT;
	pthread_t t;
	int wrote = 0;

	setup();
	make_outside();
	r.fd = open(root_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	snprintf(r.target, sizeof(r.target), "%s", outside_dir);
	ASSERT_OK(pthread_create(&t, NULL, swap_loop, &r));
	for (int i = 0; i < 2000; i++) {
		if (hutch_files_write(root_fd, i % 2 ? "d/keep" : "d/sub/keep2", "pwned", 5, NULL,
				      MAX, &err) == 0)
			wrote++;
		(void)hutch_files_read(root_fd, "d/keep", 0, 0, MAX, &b, &err);
		if (i % 20 == 0)
			(void)hutch_files_remove(root_fd, "d", true, &err);
		if (i % 20 == 10)
			(void)hutch_files_mkdir(root_fd, "d/sub/x", NULL, &err);
		if (i % 50 == 25)
			(void)hutch_files_remove(root_fd, "d/sub", true, &err);
		if (i == 1000) /* the same with a relative link */
			snprintf(r.target, sizeof(r.target), "../../../../../..%s", outside_dir);
	}
	atomic_store(&r.stop, 1);
	pthread_join(t, NULL);
	hutch_buf_release(&b);
	close(r.fd);
	printf("# %d of 2000 writes landed inside\n", wrote);
	assert_outside_intact();
}

/* A subdirectory swapped for a symlink while a recursive remove walks */
static void test_files_race_remove_walk(void)
{
	struct racer r = {.a = "d/sub", .b = "d/lnk"};
	struct hutch_err err = {0};
	pthread_t t;
	char name[32];

	setup();
	make_outside();
	r.fd = open(root_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	snprintf(r.target, sizeof(r.target), "%s", outside_dir);
	ASSERT_OK(pthread_create(&t, NULL, swap_loop, &r));
	for (int i = 0; i < 300; i++) {
		for (int j = 0; j < 5; j++) {
			snprintf(name, sizeof(name), "d/sub/f%d", j);
			(void)hutch_files_write(root_fd, name, "x", 1, NULL, MAX, &err);
		}
		(void)hutch_files_remove(root_fd, "d", true, &err);
		(void)hutch_files_mkdir(root_fd, "d", NULL, &err);
	}
	atomic_store(&r.stop, 1);
	pthread_join(t, NULL);
	close(r.fd);
	assert_outside_intact();
}

/* --- tar --- */

struct tar_item {
	const char *name;
	mode_t type; /* AE_IF* */
	mode_t perm;
	const char *data; /* contents, or the symlink's target */
	const char *hardlink;
};

/* An fd, at offset 0, of a tar made of items */
static int make_tar(const struct tar_item *items, size_t n, bool gzip)
{
	char tmpl[] = "/tmp/hutch-tar-XXXXXX";
	int fd = mkstemp(tmpl);
	struct archive *a = archive_write_new();

	ASSERT(fd >= 0);
	unlink(tmpl);
	ASSERT_EQ(archive_write_set_format_pax_restricted(a), ARCHIVE_OK);
	if (gzip)
		ASSERT_EQ(archive_write_add_filter_gzip(a), ARCHIVE_OK);
	ASSERT_EQ(archive_write_open_fd(a, fd), ARCHIVE_OK);
	for (size_t i = 0; i < n; i++) {
		struct archive_entry *e = archive_entry_new();
		size_t len = items[i].type == AE_IFREG && items[i].data ? strlen(items[i].data) : 0;
		archive_entry_set_pathname(e, items[i].name);
		archive_entry_set_filetype(e, items[i].type);
		archive_entry_set_perm(e, items[i].perm);
		archive_entry_set_size(e, (la_int64_t)len);
		if (items[i].type == AE_IFLNK)
			archive_entry_set_symlink(e, items[i].data);
		if (items[i].hardlink)
			archive_entry_set_hardlink(e, items[i].hardlink);
		ASSERT(archive_write_header(a, e) >= ARCHIVE_WARN);
		if (len)
			ASSERT_EQ(archive_write_data(a, items[i].data, len), (la_ssize_t)len);
		archive_entry_free(e);
	}
	ASSERT_EQ(archive_write_close(a), ARCHIVE_OK);
	archive_write_free(a);
	ASSERT_EQ(lseek(fd, 0, SEEK_SET), 0);
	return fd;
}

static int tar_in(const char *dest, const struct tar_item *items, size_t n, uint64_t max,
		  struct hutch_err *err)
{
	int fd = make_tar(items, n, false);
	int rc = hutch_files_tar_in(root_fd, dest, fd, NULL, max, err);

	close(fd);
	return rc;
}

/* The names in a tar, joined by spaces */
static const char *tar_names(int fd)
{
	static char names[1024];
	struct archive *a = archive_read_new();
	struct archive_entry *e;

	names[0] = '\0';
	ASSERT_EQ(lseek(fd, 0, SEEK_SET), 0);
	archive_read_support_format_tar(a);
	ASSERT_EQ(archive_read_open_fd(a, fd, 4096), ARCHIVE_OK);
	while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
		size_t len = strlen(names);
		snprintf(names + len, sizeof(names) - len, "%s ", archive_entry_pathname(e));
	}
	archive_read_free(a);
	return names;
}

/* A tree to archive: files, binary data, a UTF-8 name, modes, an empty
 * directory, symlinks (one absolute) and a fifo */
static void make_tree(const char *bin, size_t len)
{
	struct hutch_err err = {0};

	write_text("src/a.txt", "alpha");
	ASSERT_OK(hutch_files_write(root_fd, "src/sub/b.bin", bin, len, NULL, MAX, &err));
	write_text("src/sub/deep/c", "gamma");
	write_text("src/caf\xc3\xa9.txt", "utf8");
	ASSERT_OK(chmod(host("src/a.txt"), 0755));
	ASSERT_OK(mkdir(host("src/empty"), 0755));
	ASSERT_OK(symlink("a.txt", host("src/link")));
	ASSERT_OK(symlink("/etc", host("src/abs")));
	ASSERT_OK(mkfifo(host("src/fifo"), 0644));
}

static void test_files_tar_round_trip(void)
{
	struct hutch_err err = {0};
	struct hutch_buf b = HUTCH_BUF_INIT;
	static char bin[70000];
	char target[64];
	struct stat st;
	int fd = temp_fd();

	setup();
	for (size_t i = 0; i < sizeof(bin); i++)
		bin[i] = (char)(i % 251);
	make_tree(bin, sizeof(bin));
	ASSERT_OK(hutch_files_tar_out(root_fd, "src", fd, &err));
	ASSERT_STREQ(tar_names(fd),
		     "a.txt abs caf\xc3\xa9.txt empty/ link sub/ sub/b.bin sub/deep/ "
		     "sub/deep/c ");
	ASSERT_EQ(lseek(fd, 0, SEEK_SET), 0);
	ASSERT_OK(hutch_files_tar_in(root_fd, "copy/here", fd, NULL, MAX, &err));
	close(fd);

	ASSERT_STREQ(host_text(host("copy/here/a.txt")), "alpha");
	ASSERT_STREQ(host_text(host("copy/here/sub/deep/c")), "gamma");
	ASSERT_STREQ(host_text(host("copy/here/caf\xc3\xa9.txt")), "utf8");
	ASSERT_OK(stat(host("copy/here/a.txt"), &st));
	ASSERT_EQ(st.st_mode & 07777, 0755);
	ASSERT_OK(stat(host("copy/here/empty"), &st));
	ASSERT(S_ISDIR(st.st_mode));
	ASSERT_EQ(readlink(host("copy/here/link"), target, sizeof(target)), 5);
	ASSERT(memcmp(target, "a.txt", 5) == 0);
	ASSERT_EQ(readlink(host("copy/here/abs"), target, sizeof(target)), 4);
	ASSERT(access(host("copy/here/fifo"), F_OK) != 0);
	ASSERT_OK(hutch_files_read(root_fd, "copy/here/sub/b.bin", 0, 0, MAX, &b, &err));
	ASSERT_EQ(b.len, sizeof(bin));
	ASSERT(memcmp(b.data, bin, sizeof(bin)) == 0);
	hutch_buf_release(&b);
}

/* One file: one entry, named by its last component; a symlink as such */
static void test_files_tar_out_single_entry(void)
{
	struct hutch_err err = {0};
	int fd = temp_fd();

	setup();
	make_tree("b", 1);
	ASSERT_OK(hutch_files_tar_out(root_fd, "/workspace/src/sub/deep/c", fd, &err));
	ASSERT_STREQ(tar_names(fd), "c ");
	ASSERT_OK(ftruncate(fd, 0));
	ASSERT_EQ(lseek(fd, 0, SEEK_SET), 0);
	ASSERT_OK(hutch_files_tar_out(root_fd, "src/abs", fd, &err));
	ASSERT_STREQ(tar_names(fd), "abs ");
	ASSERT_ERR(hutch_files_tar_out(root_fd, "missing", fd, &err), err, ENOENT);
	ASSERT_ERR(hutch_files_tar_out(root_fd, "missing/x", fd, &err), err, ENOENT);
	close(fd);
}

static void test_files_tar_in_refuses_escapes(void)
{
	struct hutch_err err = {0};
	char evil[64];
	char abs[128];
	char relout[160];
	char evil_host[96];

	setup();
	make_outside();
	snprintf(evil, sizeof(evil), "../hutch-evil-%d", (int)getpid());
	snprintf(evil_host, sizeof(evil_host), "/tmp/hutch-evil-%d", (int)getpid());
	snprintf(abs, sizeof(abs), "%s/abs", outside_dir);
	snprintf(relout, sizeof(relout), "../../../../../..%s", outside_dir);
	{
		struct tar_item t[] = {{evil, AE_IFREG, 0644, "evil", NULL}};
		ASSERT_ERR(tar_in(".", t, 1, MAX, &err), err, EINVAL);
		ASSERT_CONTAINS(err.msg, "..");
	}
	{
		struct tar_item t[] = {{"ok/../../x", AE_IFREG, 0644, "evil", NULL}};
		ASSERT_ERR(tar_in("d", t, 1, MAX, &err), err, EINVAL);
	}
	{
		struct tar_item t[] = {{abs, AE_IFREG, 0644, "evil", NULL}};
		ASSERT_ERR(tar_in(".", t, 1, MAX, &err), err, EINVAL);
		ASSERT_CONTAINS(err.msg, "absolute");
	}
	{
		/* a symlink out, then a file "through" it */
		struct tar_item t[] = {{"s", AE_IFLNK, 0777, outside_dir, NULL},
				       {"s/pwned", AE_IFREG, 0644, "evil", NULL},
				       {"s/keep", AE_IFREG, 0644, "evil", NULL}};
		ASSERT_EQ(tar_in(".", t, 3, MAX, &err), -1);
	}
	{
		struct tar_item t[] = {{"r", AE_IFLNK, 0777, relout, NULL},
				       {"r/sub/pwned", AE_IFREG, 0644, "evil", NULL}};
		ASSERT_EQ(tar_in(".", t, 2, MAX, &err), -1);
	}
	{
		/* a link to a directory, then a directory and a link "through" it */
		struct tar_item t[] = {{"q", AE_IFLNK, 0777, outside_dir, NULL},
				       {"q/newdir", AE_IFDIR, 0755, NULL, NULL},
				       {"q/sub", AE_IFLNK, 0777, "/", NULL}};
		ASSERT_EQ(tar_in(".", t, 3, MAX, &err), -1);
	}
	{
		struct tar_item t[] = {{"f", AE_IFREG, 0644, "data", NULL},
				       {"h", AE_IFREG, 0644, NULL, "f"}};
		ASSERT_ERR(tar_in(".", t, 2, MAX, &err), err, EINVAL);
		ASSERT_CONTAINS(err.msg, "hard link");
	}
	assert_outside_intact();
	ASSERT(access(evil_host, F_OK) != 0);
	ASSERT_EQ(temp_files(), 0);
}

static void test_files_tar_in_modes_and_skips(void)
{
	struct hutch_err err = {0};
	struct tar_item t[] = {{"./dir/", AE_IFDIR, 0777, NULL, NULL},
			       {"./dir/suid", AE_IFREG, 06777, "x", NULL},
			       {"dir//plain", AE_IFREG, 0666, "y", NULL},
			       {"fifo", AE_IFIFO, 0644, NULL, NULL},
			       {"chr", AE_IFCHR, 0644, NULL, NULL},
			       {"./", AE_IFDIR, 0755, NULL, NULL}};
	struct stat st;
	int fd;

	setup();
	ASSERT_OK(tar_in("/workspace/dest", t, 6, MAX, &err));
	ASSERT_OK(stat(host("dest/dir"), &st));
	ASSERT_EQ(st.st_mode & 07777, 0755);
	ASSERT_OK(stat(host("dest/dir/suid"), &st));
	ASSERT_EQ(st.st_mode & 07777, 0755);
	ASSERT_OK(stat(host("dest/dir/plain"), &st));
	ASSERT_EQ(st.st_mode & 07777, 0644);
	ASSERT(access(host("dest/fifo"), F_OK) != 0);
	ASSERT(access(host("dest/chr"), F_OK) != 0);
	/* gzip'ed input too */
	fd = make_tar(t + 1, 1, true);
	ASSERT_OK(hutch_files_tar_in(root_fd, "gz", fd, NULL, MAX, &err));
	close(fd);
	ASSERT_STREQ(host_text(host("gz/dir/suid")), "x");
	/* garbage is EINVAL, not a crash */
	fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	(void)hutch_files_tar_in(root_fd, "z", fd, NULL, MAX, &err);
	close(fd);
	fd = open("/etc/passwd", O_RDONLY | O_CLOEXEC);
	ASSERT_ERR(hutch_files_tar_in(root_fd, "z", fd, NULL, MAX, &err), err, EINVAL);
	close(fd);
}

static void test_files_tar_in_max_bytes(void)
{
	struct hutch_err err = {0};
	static char six[601];
	struct tar_item t[] = {{"one", AE_IFREG, 0644, six, NULL},
			       {"two", AE_IFREG, 0644, six, NULL}};

	setup();
	memset(six, 'z', 600);
	ASSERT_ERR(tar_in("cap", t, 2, 1000, &err), err, EFBIG);
	ASSERT_CONTAINS(err.msg, "1000");
	ASSERT_STREQ(host_text(host("cap/one")), six);
	ASSERT(access(host("cap/two"), F_OK) != 0);
	ASSERT_EQ(temp_files(), 0);
	ASSERT_OK(tar_in("cap2", t, 2, 1200, &err));
	/* err may be NULL */
	ASSERT_EQ(tar_in("cap3", t, 2, 10, NULL), -1);
}

static const struct tap_case cases[] = {
	TAP_CASE(test_files_write_read_binary_round_trip),
	TAP_CASE(test_files_write_empty_file),
	TAP_CASE(test_files_write_creates_parents),
	TAP_CASE(test_files_write_replaces_atomically),
	TAP_CASE(test_files_write_fd_copies_with_cap),
	TAP_CASE(test_files_write_owner_and_mode),
	TAP_CASE(test_files_list_types_sorted),
	TAP_CASE(test_files_list_non_utf8_names),
	TAP_CASE(test_files_stat_normalises_the_name),
	TAP_CASE(test_files_mkdir_p),
	TAP_CASE(test_files_remove_entries),
	TAP_CASE(test_files_remove_closed_directories),
	TAP_CASE(test_files_deep_tree_with_few_fds),
	TAP_CASE(test_files_move),
	TAP_CASE(test_files_usage_counts_blocks_once),
	TAP_CASE(test_files_rejects_bad_paths),
	TAP_CASE(test_files_symlink_to_etc_stays_inside),
	TAP_CASE(test_files_symlink_up_and_absolute_resolve_in_root),
	TAP_CASE(test_files_symlink_last_component_not_followed),
	TAP_CASE(test_files_fifo_and_socket_do_not_hang),
	TAP_CASE(test_files_magic_links_stay_inside),
	TAP_CASE(test_files_without_openat2_fails_closed),
	TAP_CASE(test_files_race_swap_dir_for_symlink),
	TAP_CASE(test_files_race_remove_walk),
	TAP_CASE(test_files_tar_round_trip),
	TAP_CASE(test_files_tar_out_single_entry),
	TAP_CASE(test_files_tar_in_refuses_escapes),
	TAP_CASE(test_files_tar_in_modes_and_skips),
	TAP_CASE(test_files_tar_in_max_bytes),
	TAP_END,
};

TAP_MAIN(cases)
