#!/bin/bash
# clients/python/hutch_client.py (standard library only, E2B-shaped) against a
# real hutch serve; the TAP comes from tests/service/client_test.py.
. "$(dirname "$0")/service-lib.bash"
start_serve
K=$(new_key client)
rc=0
HUTCH_URL=$URL HUTCH_API_KEY=$K "$PY" "$(dirname "$0")/client_test.py" || rc=$?
exit "$rc"
