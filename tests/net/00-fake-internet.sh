#!/bin/bash
# Self-test of tests/net/fake-internet.bash, as root, TAP output: the fake
# internet answers from the host as documented, and internet_down leaves
# nothing behind (namespace, veth, /etc/hosts lines, temp dir), also when a
# second internet_up fails half-way and when a test is killed.
# Plain bash on purpose (no tests/lib.sh): this exercises the EXIT-trap path;
# one case checks the at_exit path in a child shell.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
LIB=$HERE/fake-internet.bash
N=0
FAILED=0

ok() {
	N=$((N + 1))
	echo "ok $N - $1"
}
not_ok() {
	N=$((N + 1))
	FAILED=$((FAILED + 1))
	echo "not ok $N - $1"
	shift
	for l in "$@"; do echo "# $l"; done
}
is() {
	if [ "$1" = "$2" ]; then ok "$3"; else not_ok "$3" "got:      '$1'" "expected: '$2'"; fi
}
# gone NS IF PID: nothing of fake internet PID is left on the host
gone() {
	local left=""
	ip netns list | grep -q "^$1\( \|$\)" && left+=" namespace"
	ip link show "$2" >/dev/null 2>&1 && left+=" veth"
	grep -q "# hutch-fake-internet $3\$" /etc/hosts && left+=" hosts"
	echo "${left:-none}"
}

if [ "$(id -u)" -ne 0 ]; then
	echo "1..0 # SKIP needs root"
	exit 0
fi
echo "1..20"
hosts_before=$(md5sum </etc/hosts)
CURL=(curl -sS --noproxy '*' -m 5)

# shellcheck source=tests/net/fake-internet.bash
. "$LIB"
if ! internet_up; then
	not_ok "internet_up"
	exit 1
fi
ok "internet_up"
is "$INET_NS/$INET_IP/$INET_IP2" "hutch-inet-$$/198.51.100.2/198.51.100.3" "exports the namespace and addresses"
is "$([ -s "$INET_DIR/cert.pem" ] && echo yes)" yes "INET_DIR has cert.pem"

is "$("${CURL[@]}" http://allowed.hutch.test/)" "hello from allowed.hutch.test" "http://allowed.hutch.test/"
is "$("${CURL[@]}" --cacert "$INET_DIR/cert.pem" https://allowed.hutch.test/)" \
	"hello from allowed.hutch.test" "https://allowed.hutch.test/ with the generated certificate"
is "$("${CURL[@]}" --cacert "$INET_DIR/cert.pem" https://other.hutch.test/any/path)" \
	"hello from other.hutch.test" "https://other.hutch.test/ (the second SAN), any path"
is "$("${CURL[@]}" -D - -o /dev/null http://second.hutch.test/ | tr -d '\r' | sed -n 's/^X-Inet-Addr: //p')" \
	"198.51.100.3" "second.hutch.test is served from the second address"
is "$(head -c 100000 /dev/zero | "${CURL[@]}" --data-binary @- http://allowed.hutch.test/up)" \
	"received 100000 bytes" "POST answers with the byte count"
is "$(head -c 3000 /dev/zero | "${CURL[@]}" -H 'Transfer-Encoding: chunked' --data-binary @- \
	--cacert "$INET_DIR/cert.pem" https://allowed.hutch.test/)" \
	"received 3000 bytes" "chunked POST over HTTPS too"
is "$(inet_echo "$INET_IP" "echo me")" "echo me" "the echo port answers"
is "$(grep -c "^https GET other.hutch.test /any/path sni=other.hutch.test from=198.51.100.1 bytes=0\$" "$INET_LOG")" \
	1 "requests.log has the request, with the SNI the server saw"
is "$(for h in loop meta private second; do getent hosts "$h.hutch.test" | awk '{print $1}'; done | tr '\n' ' ')" \
	"127.0.0.1 169.254.169.254 10.1.2.3 198.51.100.3 " "the other names resolve as documented"

# A second fake internet cannot come up beside ours; it says why and leaves
# nothing of its own, and ours still works.
out=$(bash -c '. "$1"; internet_up; echo "rc=$? dir=${INET_DIR:-none}"; echo "pid=$$"' _ "$LIB" 2>&1)
pid2=$(sed -n 's/^pid=//p' <<<"$out")
if [[ $out == *"already on 'hi$$h'"* && $out == *"rc=1 dir=none"* ]]; then
	ok "a second internet_up fails with the reason"
else
	not_ok "a second internet_up fails with the reason" "$out"
fi
is "$(gone "hutch-inet-$pid2" "hi${pid2}h" "$pid2")" "none" "and leaves nothing behind"
is "$("${CURL[@]}" http://allowed.hutch.test/)" "hello from allowed.hutch.test" "ours still answers"

# under tests/lib.sh, internet_down goes to at_exit
is "$(bash -c 'hooks=(); at_exit() { hooks+=("$1"); }; . "$1"; _inet_register; echo "${hooks[*]}"' _ "$LIB")" \
	"internet_down" "registers with at_exit when the caller has it"

ns=$INET_NS
dir=$INET_DIR
internet_down
is "$(gone "$ns" "hi$$h" $$)/$([ -e "$dir" ] && echo dir || echo nodir)" "none/nodir" \
	"internet_down removes namespace, veth, hosts lines and temp dir"
is "$(internet_down 2>&1; echo "rc=$?")" "rc=0" "internet_down twice is fine, and quiet"
# a test killed with SIGTERM still cleans up (the trap); after ours is
# down, as it needs the same addresses
out=$(bash -c '. "$1"; internet_up || exit 9; echo "pid=$$"; kill -TERM $$; sleep 5; echo survived' \
	_ "$LIB" 2>&1 </dev/null)
pid3=$(sed -n 's/^pid=//p' <<<"$out")
if [ -n "$pid3" ] && ! [[ $out =~ survived ]]; then
	is "$(gone "hutch-inet-$pid3" "hi${pid3}h" "$pid3")" "none" "killed after internet_up: nothing left"
else
	not_ok "killed after internet_up: nothing left" "$out"
fi
is "$(md5sum </etc/hosts)" "$hosts_before" "/etc/hosts is as it was"
[ "$FAILED" -eq 0 ]
