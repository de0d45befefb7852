#!/bin/bash
# hutch serve from an attacker's side: keys, another key's sessions,
# per-key rate and session limits, and loopback-only --insecure-local.
. "$(dirname "$0")/service-lib.bash"
plan 30
start_serve
A=$(new_key alice --rate 3/min)
B=$(new_key bob --max-sessions 1 --max-memory 600M)
like "$A" '^hk_[0-9a-f]{48}$' "keys add prints the key as its last word"
list=$(as_user "$HUTCH_BIN" keys list --state-dir "$STATE")
like "$list" "alice +16 +3 " "keys list shows names and limits"
if grep -q "$A" "$STATE/keys.json"; then not_ok "keys are stored hashed"; else ok "keys are stored hashed"; fi
like "$(stat -c %a "$STATE/keys.json")" '^600$' "the keys file is private (0600)"

r=$(api "" GET /v1/sessions)
is "$(status_of "$r")" 401 "no key: 401"
r=$(api "hk_0000" GET /v1/sessions)
is "$(status_of "$r")" 401 "a wrong key: 401"
r=$(api "${A%?}x" GET /v1/sessions)
is "$(status_of "$r")" 401 "a key off by its last character: 401"
r=$(curl -sS -H "Authorization: Basic $A" -w '\n%{http_code}' "$URL/v1/sessions")
is "$(status_of "$r")" 401 "not a Bearer: 401"
hp=${URL#http://}
r=$(timeout 10 bash -c "exec 3<>/dev/tcp/${hp%:*}/${hp##*:}
printf 'POST /v1/run HTTP/1.1\r\nHost: x\r\nContent-Length: 60000000\r\n\r\n' >&3
head -c 1000 /dev/zero >&3; head -n1 <&3" || true)
like "$r" "^HTTP/1.1 401" "no key is refused before the body is read"
r=$(api "" GET /metrics)
is "$(status_of "$r")" 401 "metrics need a key too"

r=$(api "$B" POST /v1/sessions -d '{"language":"bash","limits":{"memory_bytes":268435456}}')
is "$(status_of "$r")" 200 "bob makes a session"
sid=$(body_of "$r" | jget session.id)
r=$(api "$A" GET "/v1/sessions/$sid")
is "$(status_of "$r")" 404 "alice gets 404 for bob's session"
r=$(api "$A" POST "/v1/sessions/$sid/commands" -d '{"command":"id"}')
is "$(status_of "$r")" 404 "and cannot run commands in it"
r=$(api "$A" GET "/v1/sessions/$sid/files?path=x")
is "$(status_of "$r")" 404 "nor read its files"
r=$(api "$A" DELETE "/v1/sessions/$sid")
is "$(status_of "$r")" 404 "nor kill it"
r=$(api "$A" GET /v1/sessions)
is "$(body_of "$r" | jget sessions)" "[]" "alice's list does not show bob's session"
r=$(api "$B" GET /v1/sessions)
like "$(body_of "$r" | jget sessions)" "$sid" "bob's does"

r=$(api "$B" POST /v1/sessions -d '{"language":"bash","limits":{"memory_bytes":268435456}}')
is "$(status_of "$r")" 429 "bob's second session is over his --max-sessions 1"
like "$(body_of "$r" | jget error.message)" "limit" "saying so"
api "$B" DELETE "/v1/sessions/$sid" >/dev/null
r=$(api "$B" POST /v1/sessions -d '{"language":"bash","limits":{"memory_bytes":1073741824}}')
like "$(status_of "$r") $(body_of "$r" | jget error.message)" "^429 .*memory" "a session over his --max-memory is refused"

for _ in 1 2 3; do api "$A" POST /v1/run -d '{"argv":["true"]}' >/dev/null; done
h=$(curl -sS -D - -o /dev/null -H "Authorization: Bearer $A" -d '{"argv":["true"]}' "$URL/v1/run")
like "$h" "HTTP/1.1 429" "the 4th execution in a minute is over alice's --rate 3/min"
like "$h" "Retry-After: [0-9]+" "with Retry-After"
r=$(api "$B" POST /v1/run -d '{"argv":["true"]}')
is "$(status_of "$r")" 200 "another key's budget is its own"
m=$(curl -sS -H "Authorization: Bearer $B" "$URL/metrics")
like "$m" 'hutch_http_rejected_total\{reason="rate"\} 1' "metrics count the rate refusal"
like "$m" 'hutch_http_rejected_total\{reason="quota"\} 2' "and the quota ones"

as_user "$HUTCH_BIN" keys revoke bob --state-dir "$STATE" >/dev/null
r=$(api "$B" GET /v1/sessions)
is "$(status_of "$r")" 401 "a revoked key is refused at once (no restart)"
is_alive "server alive after all that"

# --insecure-local: loopback clients need no key; others still do
stop_serve
start_serve --insecure-local
r=$(api "" GET /v1/sessions)
is "$(status_of "$r")" 200 "--insecure-local: a loopback client needs no key"
r=$(api "hk_bad" GET /v1/sessions)
is "$(status_of "$r")" 401 "but a wrong key is still refused"
stop_serve
ip=$(hostname -I 2>/dev/null | awk '{ print $1 }')
if [ -n "$ip" ] && [[ $ip != 127.* ]]; then
	start_serve --listen 0.0.0.0:0 --insecure-local
	port=${URL##*:}
	r=$(curl -sS -m 10 -w '\n%{http_code}' "http://$ip:$port/v1/sessions" || true)
	is "$(status_of "$r")" 401 "--insecure-local: a client from $ip (not loopback) still needs a key"
else
	skip "--insecure-local refuses non-loopback clients" "this machine has no non-loopback address"
fi
done_testing
