#!/bin/bash
# Commands in a session: background commands with a handle (poll, wait,
# re-attach from another client, stdin, signals), LLM-shaped output rules
# (a no-output timeout that keeps the partial output, head+tail capture
# that says what it dropped), and a pty for interactive programs.
. "$(dirname "$0")/session-lib.bash"
plan 22
start_session_daemon
id=$(new_session --lang python)

c=$(hutch session sh --background "$id" 'for i in 1 2 3; do echo tick $i; sleep 0.4; done; echo done >&2; exit 3')
like "$c" '^cmd_[0-9a-f]+$' "sh --background prints a command handle"
out=$(hutch session cmd --json "$id" "$c" poll)
is "$(jget running <<<"$out")" "true" "poll: still running"
sleep 0.5
# another client, later, picks up where the output is
out=$(hutch session cmd "$id" "$c" attach 2>/dev/null || true)
is "$out" "tick 1
tick 2
tick 3" "attach from another client streams the whole output to the end"
rc=0
hutch session cmd "$id" "$c" wait >/dev/null 2>&1 || rc=$?
is "$rc" "3" "wait exits with the command's status"
out=$(hutch session cmd --json "$id" "$c" poll)
is "$(jget result.exit_code <<<"$out")" "3" "poll after the end has the ExecResult"
is "$(jget stderr <<<"$out")" "done" "and the stderr log"
out=$(hutch session cmd --json "$id" "$c" poll --timeout 1s | jget stdout_offset)
is "$out" "21" "offsets count the bytes of each stream"

c=$(hutch session sh --background "$id" 'while read -r line; do echo "got $line"; done; echo eof')
hutch session cmd "$id" "$c" stdin "one
" >/dev/null
hutch session cmd --close "$id" "$c" stdin "two
" >/dev/null
is "$(hutch session cmd "$id" "$c" wait)" "got one
got two
eof" "stdin: send, then close"

c=$(hutch session sh --background "$id" 'trap "echo term; exit 9" TERM; while :; do sleep 0.1; done')
sleep 0.3
hutch session cmd "$id" "$c" signal TERM >/dev/null
rc=0
out=$(hutch session cmd "$id" "$c" wait) || rc=$?
is "$out/$rc" "term/9" "signals reach the command"
out=$(hutch session cmd "$id" "$c" signal TERM 2>&1 || true)
like "$out" "has exited" "signalling an ended command says so"
out=$(hutch session cmd "$id" cmd_nope poll 2>&1 || true)
like "$out" "no command 'cmd_nope'" "an unknown handle is named"

# the output rules of one-shot commands
rc=0
out=$(hutch session sh --json --idle-output-timeout 700ms "$id" 'echo started; sleep 30; echo never') || rc=$?
is "$(jget limit_hit <<<"$out")" "idle_output" "a command silent for --idle-output-timeout is stopped"
is "$(jget stdout <<<"$out")" "started" "and keeps its partial output"
out=$(hutch session sh --json "$id" 'seq 1 400000')
is "$(jget stdout_truncated <<<"$out")" "true" "big output is capped"
like "$(jget stdout <<<"$out")" "^1
2
3
.*bytes omitted.*
400000$" "head and tail are kept, with the cut stated"

# a pty for interactive programs
c=$(hutch session sh --background --tty "$id" 'tty; stty size; trap "stty size" WINCH; sleep 30 & wait; sleep 30 & wait')
sleep 0.5
hutch session cmd "$id" "$c" resize 40x100 >/dev/null
sleep 0.3
out=$(hutch session cmd --json "$id" "$c" poll)
like "$(jget stdout <<<"$out")" "/dev/pts/0" "--tty: the program has a terminal of the sandbox's own devpts"
like "$(jget stdout <<<"$out")" "24 80" "with the default size"
like "$(jget stdout <<<"$out")" "40 100" "resize reaches it (SIGWINCH)"
out=$(hutch session cmd "$id" "$c" resize 40by100 2>&1 || true)
like "$out" "ROWSxCOLS" "a bad terminal size is refused with the expected form"
out=$(hutch session cmd "$id" "$c" signal NOPE 2>&1 || true)
like "$out" "signal name" "an unknown signal name is refused"
hutch session cmd "$id" "$c" signal KILL >/dev/null

# killing the session ends its background commands
c=$(hutch session sh --background "$id" 'sleep 1000')
sess kill "$id" >/dev/null
sleep 0.3
n=$(pgrep -fc "^sleep 1000$" || true)
is "$n" "0" "killing a session ends its background commands"
if [ -S "$HUTCH_SOCKET" ] && kill -0 "$SDAEMON_PID"; then ok "the daemon is still up"; else not_ok "daemon died"; fi

done_testing
