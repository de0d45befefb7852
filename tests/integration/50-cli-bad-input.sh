#!/bin/bash
# Bad input gets a clear message naming what was wrong, exit 125, and no run.
. "$(dirname "$0")/../lib.sh"
plan 48

# bad EXPECTED_REGEX ARGS...: hutch run ARGS must fail with 125 and a message
bad() {
	local want=$1
	shift
	local out rc
	set +e
	out=$(hutch run "$@" 2>&1 </dev/null)
	rc=$?
	set -e
	if [ "$rc" = 125 ] && [[ $out =~ $want ]]; then
		ok "rejected: $* -> ${out:0:90}"
	else
		not_ok "rejected: $*" "exit $rc, output: ${out:0:300}" "wanted 125 and /$want/"
	fi
}

for opt in --timeout --cpu-time; do
	bad "$opt: 'abc' is not a number" $opt abc -- true
	bad "$opt: '-1' is not a number" $opt -1 -- true
	bad "$opt: '5x' has an unknown unit" $opt 5x -- true
done
for opt in --memory --output-limit --file-size --disk; do
	bad "$opt: 'lots' is not a number" $opt lots -- true
	bad "$opt: '12Q' has an unknown unit" $opt 12Q -- true
done
bad "--pids: '1.5' is not a whole number" --pids 1.5 -- true
bad "--pids: 'many' is not a number" --pids many -- true
bad "--cpus: 'x' is not a number of CPUs" --cpus x -- true
bad "limits.memory_bytes: 1024 is outside" --memory 1K -- true
bad "limits.cpus: 0.001 is not 0 or in" --cpus 0.001 -- true
bad "limits.wall_ms: 0 is outside" --timeout 0 -- true
bad "limits.disk_bytes: 0 is outside" --disk 0 -- true
bad "limits.pids: 0 is outside" --pids 0 -- true
bad "--env: .*not NAME=value" --env NOEQUALS -- true
bad "--env: .*not NAME=value" --env 1BAD=x -- true
bad "--lang: 'cobol' is not one of" --lang cobol -c 'x'
bad "-c needs --lang" -c 'print(1)'
bad "missing command" --timeout 5
bad "option '--bogus' is unknown" --bogus -- true
bad "unknown network policy 'wide'" --net wide -- true
bad "template 'ubuntu' does not exist" --template ubuntu -- true
bad "--log-level: 'loud'" --log-level loud -- true

bad "--file: cannot open '/nonexistent/x'" --file /nonexistent/x:x -- true
bad "--file: '/etc' is not a regular file" --file /etc:x -- true
bad "--file: 'nocolon' is not HOST_PATH:SANDBOX_PATH" --file nocolon -- true
tmp=$(mktemp)
at_exit 'rm -f "$tmp"'
bad "may not contain '.' or '..'" --file "$tmp:../escape" -- true
bad "may not contain '.' or '..'" --file "$tmp:a/../../escape" -- true
bad "is outside /workspace" --file "$tmp:/etc/passwd" -- true
bad "is outside /workspace" --file "$tmp:/workspacex/a" -- true
bad "workdir: .*outside /workspace" --workdir /etc -- true
bad "workdir: .*'.' or '..'" --workdir ../.. -- true
bad "is where the code goes" --file "$tmp:main.py" --lang python -c 'print(1)'
bad "--stdin: cannot open" --stdin /nonexistent -- cat
bad "--stdin: '/dev/zero' is a device" --stdin /dev/zero -- cat

# A stdin larger than the 64 MiB cap is refused, not truncated.
set +e
out=$(head -c $((65 << 20)) /dev/zero | hutch run --stdin - -- true 2>&1)
rc=$?
set -e
if [ $rc = 125 ] && [[ $out =~ "larger than" ]]; then ok "a stdin over 64 MiB is refused clearly"; else not_ok "huge stdin: rc $rc: $out"; fi

# hutch is two programs (src/cli/cli.h): hutch itself loads only what run
# and session need; the other commands are hutch-full's, which it execs.
unlike "$(ldd "$HUTCH_BIN")" "libcurl|libarchive|libmicrohttpd|libsqlite3|libnettle" \
	"hutch loads none of libcurl, libarchive, libmicrohttpd, sqlite, nettle"
like "$(hutch daemon --help 2>&1)" "usage: hutch daemon" "hutch daemon: done by hutch-full, under hutch's name"
alone=$(mktemp -d)
at_exit 'rm -rf "$alone"'
cp "$HUTCH_BIN" "$alone/hutch"
if [ -x /usr/local/libexec/hutch/hutch-full ]; then
	skip "hutch without hutch-full: a clear error" "an installed hutch-full in /usr/local/libexec/hutch would be found"
	skip "...and exit 125" "as above"
else
	set +e
	out=$("$alone/hutch" serve --help 2>&1)
	rc=$?
	set -e
	like "$out" "cannot run .*hutch-full .*'serve'" "hutch without hutch-full: a clear error"
	is "$rc" 125 "...and exit 125"
fi
done_testing
