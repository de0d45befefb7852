#!/bin/bash
# The latency of a request under each network policy (needs root: it builds
# the fake internet of tests/net/fake-internet.bash). The same 200 plain-HTTP
# GETs (after 20 warm-up), from inside one sandbox through hutch's proxy
# (--net allow:), from inside one sandbox through slirp4netns (--net full),
# and from the host straight to the server; medians, p99 and the ratio to
# the host. Usage: bench/net-latency.sh (after make).
set -euo pipefail
cd "$(dirname "$0")/.."
. tests/lib.sh
. tests/net/fake-internet.bash
internet_up >/dev/null
code='import time, urllib.request, os, sys
proxy = os.environ.get("HTTP_PROXY")
op = urllib.request.build_opener(urllib.request.ProxyHandler({"http": proxy} if proxy else {}))
ts = []
for i in range(220):
    t = time.perf_counter(); op.open(sys.argv[1]).read(); ts.append((time.perf_counter() - t) * 1000)
ts = sorted(ts[20:])
print("%.3f %.3f" % (ts[len(ts)//2], ts[int(len(ts)*0.99)]))'
allow=$("$HUTCH_BIN" run --cold --net allow:allowed.hutch.test --timeout 2m -- /usr/bin/python3 -c "$code" http://allowed.hutch.test/)
full=$("$HUTCH_BIN" run --cold --net full --timeout 2m -- /usr/bin/python3 -c "$code" "http://$INET_IP/")
host=$(env -u HTTP_PROXY /usr/bin/python3 -c "$code" http://allowed.hutch.test/)
printf '%-44s %10s %10s %8s\n' "one HTTP GET (200 after 20 warm-up)" "p50 ms" "p99 ms" "p50/host"
for row in "allow: (hutch's proxy, in a sandbox)|$allow" "full (slirp4netns, in a sandbox)|$full" "host (no sandbox, no proxy)|$host"; do
	name=${row%%|*}
	read -r p50 p99 <<<"${row#*|}"
	read -r h50 _ <<<"$host"
	printf '%-44s %10s %10s %8s\n' "$name" "$p50" "$p99" "$(awk -v a="$p50" -v b="$h50" 'BEGIN { printf "%.2f", a / b }')"
done
read -r a50 _ <<<"$allow"
read -r f50 _ <<<"$full"
awk -v a="$a50" -v f="$f50" 'BEGIN { printf "p50 of allow: minus p50 of full: %+.3f ms per request (ratio %.2f)\n", a - f, a / f }'
