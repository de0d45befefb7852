#!/bin/bash
# Sessions from the attacker's side: one session cannot see, signal or read
# another's files or processes; the files API never leaves the workspace
# (.., absolute paths, symlinks planted by the sandbox, fifos, /proc); the
# daemon's environment never reaches the sandbox; commands are as confined
# as `hutch run`.
. "$(dirname "$0")/session-lib.bash"
plan 25
HUTCH_TEST_SECRET=host-secret-$$ start_session_daemon

a=$(new_session --lang python)
b=$(new_session --lang python)
isnt "$a" "$b" "two sessions have different ids"

sess exec "$a" 'open("secret-a.txt", "w").write("only for a")' >/dev/null
is "$(sess sh "$b" 'ls /workspace')" "" "session b does not see a's files"
out=$(sess sh "$b" 'ps -eo pid=,comm= | wc -l')
# init, the kernel, and this shell's own bash + ps + wc
if ((out <= 6)); then ok "session b sees only its own processes ($out)"; else not_ok "b sees $out processes" "$(sess sh "$b" 'ps -ef')"; fi
is "$(sess sh "$b" 'ps -eo args= | grep -c "[s]ecret-a" || true')" "0" "no trace of a's work in b's process list"
is "$(sess sh "$a" 'id -u; id -g')" "1000
1000" "commands run as the unprivileged sandbox user"
is "$(sess sh "$a" 'grep -c "^ *[a-z0-9]*:" /proc/net/dev')" "1" "a session has loopback only (no network)"
out=$(sess sh "$a" 'env')
unlike "$out" "host-secret" "the daemon's environment never enters a session"
is "$(sess sh "$a" 'grep CapEff /proc/self/status | awk "{print \$2}"')" "0000000000000000" "no capabilities"
is "$(sess sh "$a" 'grep NoNewPrivs /proc/self/status | awk "{print \$2}"')" "1" "no_new_privs"
is "$(sess sh "$a" 'unshare -U true 2>/dev/null && echo escaped || echo denied')" "denied" "no nested user namespaces from a command"

# the state directory is the daemon's alone
is "$(stat -c %a "$STATE/sessions/$a")" "700" "a session's directory is 0700"

# files API: paths that try to leave the workspace
for p in ../../../etc/passwd /etc/passwd /workspace/../etc/passwd 'a/../../etc/passwd'; do
	out=$(hutch session files "$a" read "$p" 2>&1 || true)
	unlike "$out" "root:x:0:0" "files read '$p' does not reach the host's /etc/passwd"
done

# symlinks planted from inside the sandbox
sess sh "$a" 'ln -s /etc/passwd abs; ln -s ../../../../../../etc rel; mkfifo fifo' >/dev/null
out=$(hutch session files "$a" read abs 2>&1 || true)
unlike "$out" "root:x:0:0" "an absolute symlink resolves inside the workspace, not on the host"
out=$(hutch session files "$a" read rel/passwd 2>&1 || true)
unlike "$out" "root:x:0:0" "a relative symlink cannot climb out"
hutch session files "$a" write rel/hutch-pwned "x" >/dev/null 2>&1 || true
if [ ! -e /etc/hutch-pwned ]; then
	ok "writing through a symlink to /etc creates nothing on the host"
else
	not_ok "wrote /etc/hutch-pwned"
	rm -f /etc/hutch-pwned
fi
hutch session files "$a" write abs "clobber" >/dev/null 2>&1 || true
like "$(head -c 5 /etc/passwd)" "^root:" "writing to a symlink never writes its target"
t0=$(date +%s)
out=$(timeout 10 "$HUTCH_BIN" session files "$a" read fifo 2>&1 || true)
t1=$(date +%s)
like "$out" "regular file" "reading a fifo is refused"
if ((t1 - t0 < 5)); then ok "without hanging"; else not_ok "reading a fifo took $((t1 - t0)) s"; fi
sess sh "$a" 'ln -s /proc/self/root/etc/passwd magic' >/dev/null
out=$(hutch session files "$a" read magic 2>&1 || true)
unlike "$out" "root:x:0:0" "a /proc magic link is not followed out"

# what the API writes, the sandbox can use (and it is the sandbox user's)
hutch session files "$a" write sub/dir/note.txt "hello" >/dev/null
is "$(sess sh "$a" 'cat sub/dir/note.txt; echo; stat -c %u sub/dir/note.txt')" "hello
1000" "files written by the API are the sandbox user's, parents created"
is "$(hutch session files "$a" read secret-a.txt)" "only for a" "files read gives the bytes"
out=$(hutch session files "$b" read secret-a.txt 2>&1 || true)
unlike "$out" "only for a" "and session b cannot read a's files through the API"

done_testing
