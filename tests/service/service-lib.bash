#!/bin/bash
# Helpers for the HTTP API tests: each file starts its own `hutch serve` on a
# free port with a temporary state directory (tests/lib.sh gives TAP, jget,
# HUTCH_AS for the rootless pass).
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

SRV_DIR=$(mktemp -d /tmp/hutch-service-test.XXXXXX)
chmod 755 "$SRV_DIR"
STATE=$SRV_DIR/state
SRV_PID=
URL=
# the environment may name an HTTP proxy: tests talk to the server directly
export NO_PROXY='*' no_proxy='*'

# as_user CMD...: run as HUTCH_AS when set (rootless), else as we are
as_user() {
	if [ -n "${HUTCH_AS:-}" ]; then
		runuser -u "$HUTCH_AS" -- "$@"
	else
		"$@"
	fi
}

# start_serve [OPTIONS...]: hutch serve on a free port of 127.0.0.1 (or of
# --listen HOST:0 given first); sets URL, and SRV_LOG to its stderr
SRV_N=0
start_serve() {
	local listen=127.0.0.1:0
	if [ "${1:-}" = --listen ]; then
		listen=$2
		shift 2
	fi
	SRV_N=$((SRV_N + 1))
	SRV_LOG=$SRV_DIR/log.$SRV_N
	[ -n "${HUTCH_AS:-}" ] && chown "$HUTCH_AS" "$SRV_DIR"
	as_user "$HUTCH_BIN" serve --listen "$listen" --socket "$SRV_DIR/hutch.sock" \
		--state-dir "$STATE" --pool 1 --pool-max 2 --log-level warn "$@" \
		2>>"$SRV_LOG" &
	SRV_PID=$!
	for _ in $(seq 200); do
		URL=$(grep -o 'serve: listening on http://[0-9.]*:[0-9]*' "$SRV_LOG" 2>/dev/null |
			tail -1 | sed 's/.*listening on //') || true
		[ -n "$URL" ] && return 0
		sleep 0.05
	done
	echo "Bail out! hutch serve did not start: $(cat "$SRV_LOG")"
	exit 1
}

stop_serve() {
	if [ -n "$SRV_PID" ]; then
		# rootless, $SRV_PID is runuser's: signal the server itself too
		local child
		child=$(pgrep -P "$SRV_PID" 2>/dev/null || true)
		[ -n "$child" ] && kill -TERM "$child" 2>/dev/null
		kill -TERM "$SRV_PID" 2>/dev/null || true
		wait "$SRV_PID" 2>/dev/null || true
		SRV_PID=
	fi
}

cleanup_serve() {
	stop_serve
	findmnt -rn -o TARGET | grep "^$SRV_DIR/" | xargs -r -n1 umount -l 2>/dev/null || true
	rm -rf "$SRV_DIR"
}
at_exit cleanup_serve

# new_key NAME [OPTIONS...]: prints the new key (the last word of `keys add`)
new_key() {
	as_user "$HUTCH_BIN" keys add "$@" --state-dir "$STATE" | awk 'END { print $NF }'
}

# api KEY METHOD PATH [CURL ARGS...]: the body, then the HTTP status on its own last line
api() {
	local key=$1 method=$2 path=$3
	shift 3
	local auth=()
	[ -n "$key" ] && auth=(-H "Authorization: Bearer $key")
	curl -sS -m 60 -X "$method" "${auth[@]}" -w '\n%{http_code}' "$@" "$URL$path" || true
}
# status and body of an api reply
status_of() { tail -n1 <<<"$1"; }
body_of() { sed '$d' <<<"$1"; }

# server_alive: the server still answers
server_alive() {
	[ "$(curl -s -m 5 -o /dev/null -w '%{http_code}' "$URL/v1/health")" = 200 ]
}

# is_alive NAME: a test line that fails if the server no longer answers
is_alive() {
	if server_alive; then ok "$1"; else not_ok "$1" "GET /v1/health did not answer 200"; fi
}
