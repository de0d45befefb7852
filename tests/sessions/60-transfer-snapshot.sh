#!/bin/bash
# Moving files in and out of a session (upload/download of files and of
# directories as tar, binary-safe), and snapshots: a named copy of the
# files, restored as a new session with a fresh kernel.
. "$(dirname "$0")/session-lib.bash"
plan 15
start_session_daemon

id=$(new_session --lang python)
src=$SESS_DIR/src
mkdir -p "$src/sub/deeper"
printf 'alpha\n' >"$src/a.txt"
head -c 100000 /dev/urandom >"$src/sub/blob.bin"
printf 'deep\n' >"$src/sub/deeper/d.txt"
ln -s a.txt "$src/link"
chmod -R a+rX "$src"
hutch session upload "$id" "$src" proj >/dev/null
is "$(sess sh "$id" 'cat proj/a.txt proj/sub/deeper/d.txt; readlink proj/link')" "alpha
deep
a.txt" "upload of a directory: files, subdirectories and symlinks arrive"
is "$(sess sh "$id" 'sha256sum < proj/sub/blob.bin | cut -c1-64')" "$(sha256sum <"$src/sub/blob.bin" | cut -c1-64)" "binary files arrive intact"
is "$(sess sh "$id" 'stat -c %u proj/sub/blob.bin')" "1000" "and belong to the sandbox user"
hutch session upload "$id" "$src/a.txt" single.txt >/dev/null
is "$(sess sh "$id" 'cat single.txt')" "alpha" "upload of a single file"

sess exec "$id" 'import os
os.makedirs("out/nested", exist_ok=True)
open("out/nested/r.txt", "w").write("result\n")
open("out/bin", "wb").write(bytes(range(256)))
os.symlink("/etc/passwd", "out/escape")' >/dev/null
dst=$SESS_DIR/dst
hutch session download "$id" out "$dst" >/dev/null
is "$(cat "$dst/nested/r.txt")" "result" "download of a directory"
is "$(od -An -tx1 "$dst/bin" | tr -d ' \n' | head -c 16)" "0001020304050607" "binary-safe"
is "$(readlink "$dst/escape")" "/etc/passwd" "a symlink from the sandbox comes back as a link, not the host file's contents"
hutch session download "$id" out/nested/r.txt "$SESS_DIR/one.txt" >/dev/null
is "$(cat "$SESS_DIR/one.txt")" "result" "download of a single file"

# snapshots
sess exec "$id" 'open("state.txt", "w").write("v1")' >/dev/null
sess snapshot "$id" v1 >/dev/null
sess exec "$id" 'open("state.txt", "w").write("v2")' >/dev/null
like "$(sess snapshots)" '"name": "v1"' "snapshots lists the snapshot"
new=$(hutch session restore v1 | awk 'END { print $NF }')
like "$new" '^sess_' "restore prints the new session's id"
is "$(sess sh "$new" 'cat state.txt')" "v1" "the restored session has the files as they were at the snapshot"
is "$(sess sh "$id" 'cat state.txt')" "v2" "the original goes on undisturbed"
out=$(hutch session snapshot "$id" ../evil 2>&1 || true)
like "$out" "snapshot name" "a snapshot name with a path in it is refused"
out=$(hutch session restore nope 2>&1 || true)
like "$out" "no snapshot 'nope'" "restoring a missing snapshot says so"
sess snapshot-rm v1 >/dev/null
unlike "$(sess snapshots)" '"v1"' "snapshot-rm removes it"

done_testing
