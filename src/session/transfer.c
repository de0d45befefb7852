#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "session/files.h"
#include "session/session.h"
#include "util/err.h"
#include "util/mem.h"

/*
 * Moving trees: tar upload and download of a session's workspace, and
 * snapshots (a named copy of a workspace, restored as a new session). The
 * tar goes through a memfd; every path on either side is resolved in-root
 * by files.c. Snapshots hold files only: process memory would need CRIU
 * (see docs/sessions.md).
 */

#define TAR_MAX_BYTES (1ull << 30)

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static const struct hutch_files_owner *sandbox_owner(void)
{
	/* rootless: our own uid, which the cell's user namespace maps to the
	 * sandbox's; as root: the sandbox's uid itself */
	static struct hutch_files_owner own;

	own.uid = getuid() == 0 ? (uid_t)HUTCH_SANDBOX_UID : getuid();
	own.gid = getuid() == 0 ? (gid_t)HUTCH_SANDBOX_GID : getgid();
	return &own;
}

int hutch_session_tar_out(int root, const char *path, struct hutch_buf *out, struct hutch_err *err)
{
	int fd = memfd_create("hutch-tar", MFD_CLOEXEC);
	struct stat st;
	int rc = -1;

	if (fd < 0)
		return hutch_err_set(err, errno, "memfd for a tar");
	if (hutch_files_tar_out(root, path, fd, err) < 0)
		goto out;
	if (fstat(fd, &st) < 0 || (uint64_t)st.st_size > TAR_MAX_BYTES) {
		hutch_err_setx(err, EFBIG, "the tar of '%s' is over %llu bytes", path,
			       (unsigned long long)TAR_MAX_BYTES);
		goto out;
	}
	out->len = 0;
	hutch_buf_append(out, "", 0);
	out->data = hutch_xrealloc(out->data, (size_t)st.st_size + 1);
	out->cap = (size_t)st.st_size + 1;
	for (size_t done = 0; done < (size_t)st.st_size;) {
		ssize_t n = pread(fd, out->data + done, (size_t)st.st_size - done, (off_t)done);
		if (n <= 0) {
			hutch_err_set(err, n < 0 ? errno : EIO, "read back the tar");
			goto out;
		}
		done += (size_t)n;
	}
	out->len = (size_t)st.st_size;
	out->data[out->len] = '\0';
	rc = 0;
out:
	close(fd);
	return rc;
}

int hutch_session_tar_in(int root, const char *path, const void *data, size_t len,
			 struct hutch_err *err)
{
	int fd = memfd_create("hutch-tar", MFD_CLOEXEC);
	int rc = -1;

	if (fd < 0)
		return hutch_err_set(err, errno, "memfd for a tar");
	for (size_t done = 0; done < len;) {
		ssize_t n = write(fd, (const char *)data + done, len - done);
		if (n <= 0) {
			hutch_err_set(err, errno, "buffer the tar");
			goto out;
		}
		done += (size_t)n;
	}
	if (lseek(fd, 0, SEEK_SET) == 0)
		rc = hutch_files_tar_in(root, path, fd, sandbox_owner(), TAR_MAX_BYTES, err);
	else
		hutch_err_set(err, errno, "rewind the tar");
out:
	close(fd);
	return rc;
}

/* Copy the tree under one root to another (both O_PATH directory fds). */
static int copy_tree(int from, int to, struct hutch_err *err)
{
	struct hutch_buf tar = HUTCH_BUF_INIT;
	int rc = hutch_session_tar_out(from, ".", &tar, err);

	if (rc == 0)
		rc = hutch_session_tar_in(to, ".", tar.data, tar.len, err);
	hutch_buf_release(&tar);
	return rc;
}

/* --- snapshots: <state>/snapshots/<name>/{meta.json,workspace/} --- */

static int check_name(const char *name, struct hutch_err *err)
{
	size_t n = strlen(name);

	if (n == 0 || n > 64 || name[0] == '.')
		return hutch_err_setx(err, EINVAL,
				      "snapshot name '%.80s': 1 to 64 characters, not starting "
				      "with '.'",
				      name);
	for (size_t i = 0; i < n; i++)
		if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= 'A' && name[i] <= 'Z') ||
		      (name[i] >= '0' && name[i] <= '9') || strchr("._-", name[i])))
			return hutch_err_setx(err, EINVAL,
					      "snapshot name '%.80s': only letters, digits, '.', "
					      "'_' and '-'",
					      name);
	return 0;
}

static void snapshot_dir(const struct hutch_sessions *m, const char *name, char *out, size_t n)
{
	snprintf(out, n, "%s/snapshots/%s", m->state_dir, name);
}

json_t *hutch_session_snapshot(struct hutch_sessions *m, struct hutch_session *s, const char *name,
			       struct hutch_err *err)
{
	char dir[512];
	char path[600];
	int root = -1;
	json_t *meta = NULL;

	if (check_name(name, err) < 0)
		return NULL;
	snprintf(path, sizeof(path), "%s/snapshots", m->state_dir);
	(void)mkdir(path, 0700);
	snapshot_dir(m, name, dir, sizeof(dir));
	if (mkdir(dir, 0700) < 0) {
		if (errno == EEXIST)
			hutch_err_setx(err, EEXIST, "a snapshot named '%s' exists", name);
		else
			hutch_err_set(err, errno, "mkdir '%s'", dir);
		return NULL;
	}
	snprintf(path, sizeof(path), "%s/workspace", dir);
	if (mkdir(path, 0755) < 0 ||
	    (root = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
		hutch_err_set(err, errno, "create '%s'", path);
		goto fail;
	}
	if (copy_tree(s->workspace_fd, root, err) < 0)
		goto fail;
	char *req = hutch_request_to_json(&s->conf);
	json_t *conf = req ? json_loads(req, 0, NULL) : NULL;
	free(req);
	meta = json_pack("{s:s,s:s,s:s,s:o,s:I,s:b,s:s}", "name", name, "source_session", s->id,
			 "language", s->language, "request", conf ? conf : json_object(),
			 "created_ms", (json_int_t)time(NULL) * 1000, "memory", 0, "note",
			 "files only: process memory is not saved (it would need CRIU)");
	snprintf(path, sizeof(path), "%s/meta.json", dir);
	if (json_dump_file(meta, path, JSON_INDENT(1)) < 0) {
		hutch_err_set(err, errno ? errno : EIO, "write '%s'", path);
		goto fail;
	}
	close(root);
	return meta;
fail:
	json_decref(meta);
	close_fd(&root);
	hutch_snapshot_delete(m, name, NULL);
	return NULL;
}

int hutch_snapshot_delete(struct hutch_sessions *m, const char *name, struct hutch_err *err)
{
	char dir[512];
	char path[600];
	int fd;

	if (check_name(name, err) < 0)
		return -1;
	snapshot_dir(m, name, dir, sizeof(dir));
	fd = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return hutch_err_setx(err, ENOENT, "no snapshot '%s'", name);
	(void)hutch_files_remove(fd, "workspace", true, NULL);
	close(fd);
	snprintf(path, sizeof(path), "%s/meta.json", dir);
	unlink(path);
	if (rmdir(dir) < 0)
		return hutch_err_set(err, errno, "remove '%s'", dir);
	return 0;
}

json_t *hutch_snapshot_list(struct hutch_sessions *m)
{
	char path[450];
	json_t *a = json_array();
	DIR *d;
	struct dirent *e;

	snprintf(path, sizeof(path), "%s/snapshots", m->state_dir);
	d = opendir(path);
	while (d && (e = readdir(d))) {
		char meta_path[800];
		if (e->d_name[0] == '.')
			continue;
		snprintf(meta_path, sizeof(meta_path), "%s/%s/meta.json", path, e->d_name);
		json_t *meta = json_load_file(meta_path, 0, NULL);
		if (json_is_object(meta)) {
			json_object_del(meta, "request");
			json_array_append(a, meta);
		}
		json_decref(meta);
	}
	if (d)
		closedir(d);
	return a;
}

struct hutch_session *hutch_snapshot_restore(struct hutch_sessions *m, const char *name,
					     uint64_t idle_timeout_ms, uint64_t ttl_ms,
					     struct hutch_err *err)
{
	char dir[512];
	char path[600];
	struct hutch_exec_request conf;
	struct hutch_session *s = NULL;
	int root = -1;

	if (check_name(name, err) < 0)
		return NULL;
	snapshot_dir(m, name, dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/meta.json", dir);
	json_t *meta = json_load_file(path, 0, NULL);
	char *req = json_dumps(json_object_get(meta, "request"), JSON_COMPACT);
	hutch_request_init(&conf);
	if (!json_is_object(meta) || !req ||
	    hutch_request_from_json(&conf, req, strlen(req), err) < 0) {
		if (!json_is_object(meta) || !req)
			hutch_err_setx(err, ENOENT, "no snapshot '%s'", name);
		goto out;
	}
	snprintf(path, sizeof(path), "%s/workspace", dir);
	root = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (root < 0) {
		hutch_err_set(err, errno, "open '%s'", path);
		goto out;
	}
	s = hutch_session_create(m, &conf, idle_timeout_ms, ttl_ms, err);
	if (s && copy_tree(root, s->workspace_fd, err) < 0) {
		char id[sizeof(s->id)];
		memcpy(id, s->id, sizeof(id));
		hutch_session_put(m, s);
		(void)hutch_session_kill(m, id, NULL);
		s = NULL;
	}
out:
	close_fd(&root);
	free(req);
	json_decref(meta);
	hutch_request_release(&conf);
	return s;
}
