#!/bin/bash
# Load on `hutch serve`: POST /v1/run of a Python one-liner from 8 and from 64
# concurrent clients (wrk, from Debian), with latency percentiles, throughput,
# errors, and the server's RSS sampled through the run.
#
#   bench/http-load.sh                 8 and 64 clients, 30 s each
#   LOAD_SECONDS=600 bench/http-load.sh 8   one level for 10 minutes (RSS flat?)
#
# Targets (issue 6, 2 cores): p50 <= 3 ms and p99 <= 10 ms at 8 clients, no
# errors, RSS flat. The server runs with --insecure-local (no key): this
# measures the service, not the key check.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v wrk >/dev/null || {
	echo "bench: wrk is not installed (apt-get install wrk)" >&2
	exit 1
}
SECONDS_EACH=${LOAD_SECONDS:-30}
LEVELS=${*:-8 64}
HUTCH_BIN=${HUTCH_BIN:-build/hutch}
tmp=$(mktemp -d /tmp/hutch-load.XXXXXX)
srv=
cleanup() {
	[ -n "$srv" ] && kill "$srv" 2>/dev/null && wait "$srv" 2>/dev/null
	findmnt -rn -o TARGET | grep "^$tmp/" | xargs -r -n1 umount -l 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

"$HUTCH_BIN" serve --listen 127.0.0.1:0 --insecure-local --socket "$tmp/s.sock" \
	--state-dir "$tmp/state" --pool 8 --pool-max 64 --log-level warn 2>"$tmp/log" &
srv=$!
url=
for _ in $(seq 200); do
	url=$(grep -o 'listening on http://[0-9.]*:[0-9]*' "$tmp/log" 2>/dev/null | tail -1 |
		sed 's/.*listening on //') || true
	[ -n "$url" ] && break
	sleep 0.05
done
[ -n "$url" ] || {
	echo "bench: hutch serve did not start: $(cat "$tmp/log")" >&2
	exit 1
}

# errors: connect, read, write and timeout errors, and replies that are not
# 2xx or 3xx (summary.errors.status); one reply's content is checked first
cat >"$tmp/post.lua" <<'EOF'
wrk.method = "POST"
wrk.body = '{"language":"python","code":"print(sum(range(1000)))"}'
wrk.headers["Content-Type"] = "application/json"
done = function(summary, latency, requests)
	local e = summary.errors
	io.write(string.format("RESULT %d %.3f %.3f %.3f %.3f %d\n", summary.requests,
		latency:percentile(50) / 1000, latency:percentile(90) / 1000,
		latency:percentile(99) / 1000, latency.max / 1000,
		e.connect + e.read + e.write + e.timeout + e.status))
end
EOF
reply=$(curl -sS -H 'Content-Type: application/json' \
	-d '{"language":"python","code":"print(sum(range(1000)))"}' "$url/v1/run")
grep -q '"stdout":"499500\\n"' <<<"$reply" || {
	echo "bench: unexpected reply: $reply" >&2
	exit 1
}

rss_kb() { awk '/^VmRSS/ { print $2 }' "/proc/$srv/status"; }
# warm up: fill the pool and the server's caches
wrk -t2 -c8 -d3s -s "$tmp/post.lua" "$url/v1/run" >/dev/null 2>&1 || true

printf '%-8s %8s %9s %9s %9s %9s %9s %8s %15s\n' clients requests "req/s" "p50 ms" "p90 ms" \
	"p99 ms" "max ms" errors "RSS KiB"
for c in $LEVELS; do
	rss0=$(rss_kb)
	samples=$tmp/rss.$c
	(while kill -0 "$srv" 2>/dev/null; do
		rss_kb >>"$samples"
		sleep 1
	done) &
	sampler=$!
	out=$(wrk -t2 -c"$c" -d"${SECONDS_EACH}s" --timeout 30s -s "$tmp/post.lua" "$url/v1/run" 2>&1)
	kill "$sampler" 2>/dev/null || true
	wait "$sampler" 2>/dev/null || true
	read -r _ n p50 p90 p99 max errs <<<"$(grep '^RESULT' <<<"$out")"
	rss1=$(rss_kb)
	printf '%-8s %8s %9.0f %9s %9s %9s %9s %8s %15s\n' "$c" "$n" \
		"$(awk -v n="$n" -v s="$SECONDS_EACH" 'BEGIN { print n / s }')" "$p50" "$p90" "$p99" \
		"$max" "$errs" "$rss0->$rss1"
	if [ "$SECONDS_EACH" -ge 120 ]; then
		awk 'NR == 1 { first = $1 } { last = $1; if ($1 > max) max = $1 }
			END { printf "  RSS over the run: first %d KiB, last %d KiB, max %d KiB\n", first, last, max }' "$samples"
	fi
done
