#!/bin/bash
# JSON-RPC over stdio without the SDK: version negotiation, malformed JSON,
# unknown methods, notifications, batches, bad envelopes, a 10 MB line, and
# the server going on after each; stdout carries only JSON-RPC lines. With
# no daemon reachable and no --cold, the server says it runs in-process.
. "$(dirname "$0")/mcp-lib.bash"
plan 31

IN=$SESS_DIR/in.jsonl
OUT=$SESS_DIR/out.jsonl
ERR=$SESS_DIR/err.log
msg() { printf '%s\n' "$1" >>"$IN"; }

init='"method":"initialize","params":{"capabilities":{},"clientInfo":{"name":"t","version":"1"}'
msg '{"jsonrpc":"2.0","id":1,'"$init"',"protocolVersion":"2024-11-05"}}'
msg '{"jsonrpc":"2.0","id":2,'"$init"',"protocolVersion":"1999-01-01"}}'
msg '{"jsonrpc":"2.0","id":3,"method":"initialize","params":{}}'
msg '{"jsonrpc":"2.0","method":"notifications/initialized"}'
msg '{"jsonrpc": "2.0", "id": 4, "method": "tools/list"'
msg '{"jsonrpc":"2.0","id":5,"method":"ping"}'
msg '{"jsonrpc":"2.0","id":"six","method":"prompts/list"}'
msg '[{"jsonrpc":"2.0","id":7,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}},{"jsonrpc":"2.0","id":8,"method":"tools/list"}]'
msg '[]'
msg '{"id":9,"method":"ping"}'
msg '{"jsonrpc":"2.0","id":10,"method":"tools/call","params":["run_code"]}'
msg '{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"arguments":{}}}'
# 10 MB of code in one otherwise valid message: over the 8 MiB limit
"$PY" -c 'import json, sys; sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": 12, "method": "tools/call", "params": {"name": "run_code", "arguments": {"language": "python", "code": "#" + "x" * (10 << 20)}}}) + "\n")' >>"$IN"
msg '{"jsonrpc":"2.0","id":13,"result":{}}'
msg ''
msg '{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"run_code","arguments":{"language":"python","code":"print(7*6)"}}}'
msg '"just a string"'
msg '{"jsonrpc":"2.0","id":15,"method":"ping","params":{"_meta":{"progressToken":1}}}'
# a session in-process: its kernel's output must not reach our stdout
msg '{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"session_create","arguments":{"language":"bash"}}}'
printf '%s' '{"jsonrpc":"2.0","id":16,"method":"ping"}' >>"$IN" # no final newline

rc=0
# HUTCH_SOCKET points nowhere: no daemon, so in-process
hutch mcp --state-dir "$SESS_DIR/local" <"$IN" >"$OUT" 2>"$ERR" || rc=$?
is "$rc" "0" "the server exits 0 at the end of its input"
like "$(cat "$ERR")" "in-process \(no daemon reachable" "stderr says it runs in-process, and why"

# resp ID: the response with this id (ids are unique here), as JSON
resp() {
	"$PY" - "$OUT" "$1" <<'PY'
import json, sys
want = sys.argv[2]
for line in open(sys.argv[1]):
    for r in (lambda v: v if isinstance(v, list) else [v])(json.loads(line)):
        if json.dumps(r.get("id")) == want:
            print(json.dumps(r))
PY
}

valid=$("$PY" -c '
import json, sys
lines = open(sys.argv[1]).read().split("\n")
assert lines[-1] == ""
ok = all(json.loads(l) is not None for l in lines[:-1])
print(len(lines) - 1 if ok else "not JSON")' "$OUT" 2>&1)
is "$valid" "17" "stdout holds one JSON line per answered message, nothing else"

is "$(resp 1 | jget result.protocolVersion)" "2024-11-05" "initialize: a version we support is accepted"
is "$(resp 1 | jget result.serverInfo.name)" "hutch" "initialize: serverInfo"
is "$(resp 1 | jget result.capabilities.tools.listChanged)" "false" "initialize: the tools capability"
is "$(resp 2 | jget result.protocolVersion)" "2025-06-18" "initialize: an unknown version gets our latest"
is "$(resp 3 | jget error.code)" "-32602" "initialize without protocolVersion: -32602"
like "$(resp 3 | jget error.message)" "params.protocolVersion" "naming the field"
line4=$(sed -n 4p "$OUT")
is "$(jget error.code <<<"$line4")" "-32700" "malformed JSON: -32700 (and the notification before it got no answer)"
is "$(jget id <<<"$line4")" "null" "with id null"
is "$(resp 5)" '{"jsonrpc": "2.0", "id": 5, "result": {}}' "ping after a parse error: the server keeps going"
is "$(resp '"six"' | jget error.code)" "-32601" "an unknown method: -32601, string id echoed"
like "$(resp '"six"' | jget error.message)" "prompts/list" "naming the method"
batch=$(sed -n 7p "$OUT")
is "$("$PY" -c 'import json,sys; print([r["id"] for r in json.loads(sys.argv[1])])' "$batch")" "[7, 8]" "a batch: one response per request, none for its notification"
is "$(resp 8 | "$PY" -c 'import json,sys; print(len(json.load(sys.stdin)["result"]["tools"]))')" "8" "tools/list inside a batch"
is "$(sed -n 8p "$OUT" | jget error.code)" "-32600" "an empty batch: -32600"
is "$(resp 9 | jget error.code)" "-32600" "no jsonrpc member: -32600"
like "$(resp 9 | jget error.message)" "jsonrpc" "naming it"
is "$(resp 10 | jget error.code)" "-32602" "params not an object: -32602"
is "$(resp 11 | jget error.code)" "-32602" "tools/call without a name: -32602"
like "$(resp 11 | jget error.message)" "params.name" "naming the field"
# (tool calls run on threads: the lines below are found by what they say)
big=$(grep -m1 'over the limit' "$OUT" || true)
is "$(jget error.code <<<"$big")" "-32600" "a 10 MB line: -32600"
like "$(jget error.message <<<"$big")" "over the limit of 8388608 bytes" "with a clear message"
like "$(resp 14 | jget result.content)" "42" "after the 10 MB line, a run still works (a response from the client got no answer)"
is "$(resp 14 | jget result.structuredContent.path)" "cold" "on the cold path"
is "$(grep -m1 'must be a JSON object' "$OUT" | jget error.code)" "-32600" "a message that is not an object: -32600"
is "$(resp 15 | jget result)" "{}" "_meta in params is accepted"
is "$(resp 16 | jget result)" "{}" "a last message without a newline is answered"
like "$(resp 17 | jget result.structuredContent.session_id)" "^sess_" "an in-process session"
rss=$(ps -o rss= -p $$ | tr -d ' ')
like "$rss" '^[0-9]+$' "(the harness is still alive)"

done_testing
