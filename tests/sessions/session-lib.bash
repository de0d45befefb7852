#!/bin/bash
# Helpers for the session tests: a private daemon with its own state
# directory (tests/lib.sh gives TAP, hutch, jget, HUTCH_AS).
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

SESS_DIR=$(mktemp -d /tmp/hutch-sessions-test.XXXXXX)
chmod 755 "$SESS_DIR"
STATE=$SESS_DIR/state
export HUTCH_SOCKET=$SESS_DIR/hutch.sock
SDAEMON_PID=

start_session_daemon() {
	local cmd=("$HUTCH_BIN" daemon --socket "$HUTCH_SOCKET" --state-dir "$STATE" --pool 1
		--pool-max 2 --log-level warn)
	rm -f "$HUTCH_SOCKET"
	if [ -n "${HUTCH_AS:-}" ]; then
		chown "$HUTCH_AS" "$SESS_DIR"
		runuser -u "$HUTCH_AS" -- "${cmd[@]}" 2>>"$SESS_DIR/log" &
	else
		"${cmd[@]}" 2>>"$SESS_DIR/log" &
	fi
	SDAEMON_PID=$!
	for _ in $(seq 200); do
		[ -S "$HUTCH_SOCKET" ] && return 0
		sleep 0.05
	done
	echo "Bail out! the daemon did not start: $(cat "$SESS_DIR/log")"
	exit 1
}

# stop_session_daemon [SIGNAL]
stop_session_daemon() {
	if [ -n "$SDAEMON_PID" ]; then
		# rootless, $SDAEMON_PID is runuser's: signal the daemon itself
		pkill "-${1:-TERM}" -f -- "--socket $HUTCH_SOCKET " 2>/dev/null || true
		kill "-${1:-TERM}" "$SDAEMON_PID" 2>/dev/null || true
		wait "$SDAEMON_PID" 2>/dev/null || true
		SDAEMON_PID=
	fi
}

cleanup_sessions() {
	stop_session_daemon TERM
	# quota'd workspaces are mounts that outlive the daemon (on purpose)
	findmnt -rn -o TARGET | grep "^$SESS_DIR/" | xargs -r -n1 umount -l 2>/dev/null || true
	rm -rf "$SESS_DIR"
}
at_exit cleanup_sessions

# sess ARGS...: `hutch session ARGS` (never fails the script; tests check output)
sess() { hutch session "$@" || true; }
# new_session ARGS...: prints the new id (the last word of `session new`)
new_session() { hutch session new "$@" | awk 'END { print $NF }'; }
