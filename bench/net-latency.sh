#!/bin/bash
# The added latency of --net allow: (needs root: it builds the fake internet of
# tests/net/fake-internet.bash). The same 200 plain-HTTP GETs (after 20 warm-up) from
# inside one sandbox through hutch's proxy, and from the host straight to the server.
# Usage: bench/net-latency.sh (after make).
set -euo pipefail
cd "$(dirname "$0")/.."
. tests/lib.sh
. tests/net/fake-internet.bash
internet_up >/dev/null
code='import time, urllib.request, statistics, os
op = urllib.request.build_opener(urllib.request.ProxyHandler({"http": os.environ.get("HTTP_PROXY", "")}) if os.environ.get("HTTP_PROXY") else urllib.request.ProxyHandler({}))
ts = []
for i in range(220):
    t = time.perf_counter(); op.open("http://allowed.hutch.test/").read(); ts.append((time.perf_counter() - t) * 1000)
ts = sorted(ts[20:])
print("p50 %.2f ms p99 %.2f ms" % (ts[len(ts)//2], ts[int(len(ts)*0.99)]))'
echo "through the proxy (inside a sandbox, --net allow:allowed.hutch.test):"
"$HUTCH_BIN" run --cold --net allow:allowed.hutch.test --timeout 2m -- /usr/bin/python3 -c "$code"
echo "direct (on the host, no proxy):"
env -u HTTP_PROXY /usr/bin/python3 -c "$code"
