"""Drives clients/python/hutch_client.py against a real `hutch serve` (started by
60-python-client.sh, which passes HUTCH_URL and HUTCH_API_KEY). Prints TAP."""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "clients", "python"))
import hutch_client as hc  # noqa: E402

n = 0
failed = 0


def check(cond, name, got=None):
    global n, failed
    n += 1
    if cond:
        print("ok %d - %s" % (n, name))
    else:
        failed += 1
        print("not ok %d - %s" % (n, name))
        print("# got: %r" % (got,))


print("1..17")
r = hc.run("print(6*7)")
check(r.stdout == "42\n" and r.status == "ok", "run(code) runs in a fresh sandbox", r)
chunks = []
r = hc.run(argv=["sh", "-c", "echo a; sleep 1; echo b"], on_stdout=lambda s: chunks.append((time.time(), s)))
check(r.stdout == "a\nb\n", "run(..., on_stdout=) returns the result", r)
check(len(chunks) >= 2 and chunks[-1][0] - chunks[0][0] > 0.7, "and streams output as it happens", chunks)

with hc.Sandbox.create(labels={"who": "client-test"}) as sbx:
    check(sbx.sandbox_id.startswith("sess_"), "Sandbox.create() makes a session", sbx.info)
    sbx.run_code("import statistics; xs = [4, 8, 15, 16]")
    ex = sbx.run_code("statistics.median(xs)")
    check(ex.text == "11.5", "run_code keeps state; .text is the value", ex.raw)
    ex = sbx.run_code("1/0")
    check(ex.error is not None and ex.error.name == "ZeroDivisionError", "an exception is .error", ex.raw)
    ex = sbx.run_code("import json; print('x'); {'a': 1}")
    check(ex.logs.stdout == "x\n" and ex.results and ex.results[-1].is_main_result, "logs and results", ex.raw)
    out = []
    res = sbx.commands.run("echo one; sleep 0.5; echo two", on_stdout=out.append)
    check(res.exit_code == 0 and "".join(out) == "one\ntwo\n", "commands.run(on_stdout=) streams", (res.raw, out))
    res = sbx.commands.run("exit 3")
    check(res.exit_code == 3, "commands.run returns the exit code", res.raw)
    h = sbx.commands.run("sleep 0.2; echo bg", background=True)
    check(h.wait().stdout == "bg\n", "a background command's handle waits", None)
    sbx.files.write("d/a.bin", b"\x00\x01\xff")
    check(sbx.files.read("d/a.bin", format="bytes") == b"\x00\x01\xff", "files.write/read keep bytes")
    sbx.files.write("t.txt", "text")
    check(sbx.files.read("t.txt") == "text", "and text")
    check([e["name"] for e in sbx.files.list("d")] == ["a.bin"], "files.list", sbx.files.list("d"))
    try:
        sbx.files.read("nope")
        check(False, "a missing file raises NotFoundError")
    except hc.NotFoundError:
        check(True, "a missing file raises NotFoundError")
    try:
        sbx.run_code("1", timeout_ms=-1)
        check(False, "bad input raises HutchError 400")
    except hc.HutchError as e:
        check(e.status == 400 and "timeout_ms" in e.message, "bad input raises HutchError 400 naming the field", e)
    sid = sbx.sandbox_id
try:
    hc.Sandbox.connect(sid)
    check(False, "leaving the with block kills the sandbox")
except hc.NotFoundError:
    check(True, "leaving the with block kills the sandbox")
try:
    hc.run("1", api_key="hk_wrong")
    check(False, "a wrong key raises HutchError 401")
except hc.HutchError as e:
    check(e.status == 401, "a wrong key raises HutchError 401", e)
sys.exit(1 if failed else 0)
