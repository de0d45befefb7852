#!/bin/bash
# hutch serve: the session routes, each mapped to its JSON op: exec, shell
# commands (foreground and background), files (raw bytes), archives,
# network, reset, snapshot/restore, fork (501), kill.
. "$(dirname "$0")/service-lib.bash"
plan 37
start_serve
K=$(new_key alice)

r=$(api "$K" POST /v1/sessions -d '{"language":"python"}')
is "$(status_of "$r")" 200 "POST /v1/sessions makes a session"
id=$(body_of "$r" | jget session.id)
like "$id" '^sess_[0-9a-f]+$' "and returns its info"
r=$(api "$K" POST /v1/sessions -d '{"language":"cobol"}')
like "$(status_of "$r") $(body_of "$r" | jget error.message)" "^400 .*cobol" "a bad language is a 400 saying why"
r=$(api "$K" POST /v1/sessions -d '{"language":"python","ttl_ms":"soon"}')
like "$(status_of "$r") $(body_of "$r" | jget error.message)" "^400 .*ttl_ms" "a wrong type is a 400 naming the field"

S=/v1/sessions/$id
api "$K" POST "$S/exec" -d '{"code":"import statistics; xs = [4, 8, 15, 16]"}' >/dev/null
r=$(api "$K" POST "$S/exec" -d '{"code":"statistics.median(xs)"}')
is "$(body_of "$r" | jget value.text/plain)" "11.5" "state persists between exec calls; the value is a MIME bundle"
r=$(api "$K" POST "$S/exec" -d '{"code":"1/0"}')
is "$(body_of "$r" | jget error.type)" ZeroDivisionError "an exception is a structured error ($(status_of "$r"))"
r=$(api "$K" POST "$S/exec" -d '{"code":"1","timeout_ms":-1}')
like "$(status_of "$r") $(body_of "$r" | jget error.message)" "^400 .*timeout_ms" "a negative timeout is a 400 naming it"
r=$(api "$K" POST "$S/exec" -d '{"code":"1","timeout_ms":999999999999}')
like "$(status_of "$r") $(body_of "$r" | jget error.message)" "^400 .*timeout_ms.*cap" "a timeout above the server's cap is a 400"

r=$(api "$K" POST "$S/commands" -d '{"command":"echo hi; exit 3"}')
is "$(body_of "$r" | jget stdout)" hi "POST .../commands runs a shell command"
is "$(body_of "$r" | jget exit_code)" 3 "with its exit code"
r=$(api "$K" POST "$S/commands" -d '{"command":"sleep 0.3; echo bg","background":true}')
cid=$(body_of "$r" | jget command.command_id)
like "$cid" '.+' "background: true returns a command handle"
r=$(api "$K" GET "$S/commands")
like "$(body_of "$r")" "$cid" "GET .../commands lists it"
r=$(api "$K" POST "$S/commands/$cid" -d '{"action":"wait","timeout_ms":10000}')
like "$(body_of "$r")" '"stdout":"bg\\n"' "POST .../commands/{cid} {action: wait} gets its output"
r=$(api "$K" POST "$S/commands/nope" -d '{"action":"poll"}')
is "$(status_of "$r")" 404 "an unknown command is a 404"

printf 'a\0b\377' >"$SRV_DIR/bin"
r=$(api "$K" PUT "$S/files?path=d/x.bin" --data-binary @"$SRV_DIR/bin")
is "$(status_of "$r")" 200 "PUT .../files writes the raw body"
curl -sS -H "Authorization: Bearer $K" -o "$SRV_DIR/back" "$URL$S/files?path=d/x.bin"
if cmp -s "$SRV_DIR/bin" "$SRV_DIR/back"; then ok "GET .../files returns the exact bytes"; else not_ok "GET .../files returns the exact bytes"; fi
r=$(api "$K" GET "$S/files?path=d/x.bin&offset=2&length=1")
is "$(body_of "$r")" b "offset and length select a range"
r=$(api "$K" GET "$S/files/list?path=d")
like "$(body_of "$r")" '"name":"x.bin"' "files/list lists"
r=$(api "$K" GET "$S/files/stat?path=d/x.bin")
is "$(body_of "$r" | jget stat.size)" 4 "files/stat stats"
r=$(api "$K" POST "$S/files/mkdir?path=e/f")
is "$(status_of "$r")" 200 "files/mkdir makes directories"
r=$(api "$K" GET "$S/files?path=../../etc/passwd")
like "$(status_of "$r")" '^4' "a path out of the workspace is refused ($(status_of "$r"))"
r=$(api "$K" DELETE "$S/files?path=d&recursive=true")
r=$(api "$K" GET "$S/files?path=d/x.bin")
is "$(status_of "$r")" 404 "DELETE .../files removes"

mkdir -p "$SRV_DIR/tree/src" && echo 'print("from tar")' >"$SRV_DIR/tree/src/m.py"
tar -C "$SRV_DIR/tree" -cf "$SRV_DIR/in.tar" src
r=$(api "$K" PUT "$S/archive?path=proj" --data-binary @"$SRV_DIR/in.tar")
is "$(status_of "$r")" 200 "PUT .../archive extracts a tar"
r=$(api "$K" POST "$S/commands" -d '{"command":"python3 proj/src/m.py"}')
is "$(body_of "$r" | jget stdout)" "from tar" "its files are there"
curl -sS -H "Authorization: Bearer $K" -o "$SRV_DIR/out.tar" "$URL$S/archive?path=proj"
like "$(tar -tf "$SRV_DIR/out.tar" 2>&1)" "m.py" "GET .../archive returns a tar"

r=$(api "$K" PUT "$S/network" -d '{"network":"none"}')
is "$(status_of "$r")" 200 "PUT .../network sets the policy"
r=$(api "$K" POST "$S/reset")
r=$(api "$K" POST "$S/exec" -d '{"code":"xs"}')
is "$(body_of "$r" | jget error.type)" NameError "reset forgets the interpreter's state"

r=$(api "$K" POST "$S/pause")
if [ "$(status_of "$r")" = 200 ]; then
	is "$(body_of "$r" | jget session.state)" paused "POST .../pause freezes the session"
	r=$(api "$K" POST "$S/resume")
	is "$(body_of "$r" | jget session.state)" running "POST .../resume thaws it"
elif [ -n "${HUTCH_AS:-}" ]; then
	# rootless here: no cgroup is delegated to this user, so no freezer; the
	# refusal must say so (tests/sessions/30-session-lifecycle.sh covers pause)
	like "$(status_of "$r") $(body_of "$r" | jget error.message)" "^[45][0-9][0-9] .*freezer" \
		"rootless without a freezer, pause is refused saying why"
	r=$(api "$K" POST "$S/exec" -d '{"code":"1+1"}')
	is "$(body_of "$r" | jget value.text/plain)" 2 "and the session still works"
else
	not_ok "POST .../pause" "$r"
	not_ok "POST .../resume" "not tried"
fi
r=$(api "$K" POST "$S/fork")
is "$(status_of "$r")" 501 "fork is a 501"
like "$(body_of "$r" | jget error.message)" "not supported.*namespaces" "saying why"

r=$(api "$K" POST "$S/snapshot" -d '{"name":"snap1"}')
is "$(status_of "$r")" 200 "snapshot"
r=$(api "$K" POST /v1/snapshots/snap1/restore)
id2=$(body_of "$r" | jget session.id)
r=$(api "$K" GET "/v1/sessions/$id2/files/list?path=proj/src")
like "$(body_of "$r")" "m.py" "restore makes a session with the snapshot's files"
r=$(api "$K" GET /v1/snapshots)
like "$(body_of "$r")" '"name":"snap1"' "GET /v1/snapshots lists it"
r=$(api "$K" DELETE /v1/snapshots/snap1)
is "$(status_of "$r")" 200 "DELETE /v1/snapshots/{name} deletes it"
r=$(api "$K" POST /v1/snapshots/snap1/restore)
is "$(status_of "$r")" 404 "and then it is a 404"

api "$K" DELETE "$S" >/dev/null
r=$(api "$K" GET "$S")
is "$(status_of "$r")" 404 "DELETE kills; the session is then a 404"
done_testing
