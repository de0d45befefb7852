#!/bin/bash
# The agent's workflow, ten steps through the CLI in one Python session:
# import, load data, transform, plot, write a file, and run a test over it,
# with state carried from step to step.
. "$(dirname "$0")/session-lib.bash"
plan 11
start_session_daemon

if ! /usr/bin/python3 -c 'import pandas, matplotlib, pytest' 2>/dev/null; then
	skip_all "python3-pandas, python3-matplotlib or python3-pytest is not installed (scripts/deps.sh installs them)"
fi
id=$(new_session --lang python --memory 1G --timeout 60s)
like "$id" '^sess_' "1. a session"
printf 'city,temp\nOslo,4\nLima,19\nCairo,28\nOslo,6\nLima,21\n' >"$SESS_DIR/temps.csv"
chmod 644 "$SESS_DIR/temps.csv"
hutch session files "$id" write data/temps.csv --from "$SESS_DIR/temps.csv" >/dev/null
is "$(sess sh "$id" 'wc -l < data/temps.csv')" "6" "2. upload the data"
is "$(sess exec "$id" 'import pandas as pd')" "" "3. import pandas"
is "$(sess exec "$id" 'df = pd.read_csv("data/temps.csv"); len(df)')" "5" "4. load the data (pd is still imported)"
is "$(sess exec "$id" 'means = df.groupby("city").temp.mean(); means.to_dict()')" "{'Cairo': 28.0, 'Lima': 20.0, 'Oslo': 5.0}" "5. transform"
out=$(hutch session exec --json "$id" 'import matplotlib.pyplot as plt
ax = means.plot.bar(); plt.title("mean temperature"); plt.show()')
png=$(jget display <<<"$out" | "$PY" -c 'import json,sys,base64; d=json.load(sys.stdin); print(base64.b64decode(d[0]["image/png"])[:4] == b"\x89PNG")')
is "$png" "True" "6. plot: the figure comes back as image/png"
out=$(hutch session exec --json "$id" 'df.head(2)')
like "$(jget value.text/html <<<"$out")" "<table" "7. a DataFrame value has text/html"
sess exec "$id" 'means.to_csv("means.csv")' >/dev/null
is "$(hutch session files "$id" read means.csv | head -1)" "city,temp" "8. write a file the host can read"
hutch session files "$id" write test_means.py 'import csv
def test_means():
    rows = {r["city"]: float(r["temp"]) for r in csv.DictReader(open("means.csv"))}
    assert rows == {"Cairo": 28.0, "Lima": 20.0, "Oslo": 5.0}
' >/dev/null
out=$(sess sh "$id" '/usr/bin/python3 -m pytest -q -p no:cacheprovider test_means.py 2>&1 | tail -1')
like "$out" "1 passed" "9. run a test over it"
is "$(sess exec "$id" 'sorted(means.index)[0], int(df.temp.max())')" "('Cairo', 28)" "10. state from step 4 and 5 is still there"
is "$(jget session.calls <<<"$(sess info "$id")")" "9" "info counts the calls"

done_testing
