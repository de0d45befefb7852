"""Tests of kernels/python.py through the protocol (docs/kernels.md). TAP output.

Run: /usr/bin/python3 tests/kernels/test_python_kernel.py
"""
import base64
import os
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Kernel, check, done  # noqa: E402


def has_module(k, name):
    """Whether the kernel's interpreter (not necessarily ours) can import name."""
    r = k.exec("__import__('importlib.util').util.find_spec(%r) is not None" % name)
    return (r.get("value") or {}).get("text/plain") == "True"


def skip(what, why):
    check.n += 1
    print("ok %d - # SKIP %s (%s)" % (check.n, why, what))


def plain(r):
    return (r.get("value") or {}).get("text/plain")


def error_type(r):
    return (r.get("error") or {}).get("type")


k = Kernel("python")
check(k.ready.get("language") == "python" and k.ready.get("version", "").startswith("3."),
      "ready frame names python and its version")

# --- REPL semantics and persistence
r = k.exec("1+1")
check(r["status"] == "ok" and plain(r) == "2", "1+1 gives text/plain 2")
r = k.exec("x = 5")
check(r["status"] == "ok" and r["value"] is None and r["error"] is None, "an assignment has a null value")
r = k.exec("print(3)")
check(r["stdout"] == "3\n" and r["value"] is None, "print(3): stdout 3 and a null value")
r = k.exec("None")
check(r["value"] is None, "a None expression has a null value, like the REPL")
k.exec("import math\ndef f(n):\n    return n * 2\nclass C:\n    pass")
r = k.exec("x + f(1), math.sqrt(16), C.__name__")
check(plain(r) == "(7, 4.0, 'C')", "globals, imports, functions and classes persist: %r" % plain(r))
r = k.exec("y = 1\ny += 1\ny")
check(plain(r) == "2", "statements run before the final expression")

# --- errors
r = k.exec("def g():\n    return 1 / 0\n\ng()")
err = r.get("error") or {}
tb = err.get("traceback", "")
check(r["status"] == "error" and err.get("type") == "ZeroDivisionError"
      and err.get("message") == "division by zero", "ZeroDivisionError is reported structured")
check("return 1 / 0" in tb and "<cell-" in tb and "g()" in tb, "its traceback shows the user's lines")
check('File "<string>"' not in tb and "run_coroutine" not in tb and "def call" not in tb,
      "its traceback has no kernel frames")
check("ZeroDivisionError: division by zero" in r["stderr"], "the traceback is also on stderr")
r = k.exec("x = = 1")
check(r["status"] == "error" and error_type(r) == "SyntaxError"
      and "x = = 1" in r["error"]["traceback"], "SyntaxError, with the offending line")
r = k.exec("print('never')\nreturn 5")
check(error_type(r) == "SyntaxError" and r["stdout"] == "",
      "a compile error (return outside function) runs nothing of the cell")
r = k.exec("undefined_name")
check(error_type(r) == "NameError" and "undefined_name" in r["error"]["message"], "NameError")
r = k.exec("x")
check(plain(r) == "5", "state survives exceptions")
r = k.exec("import sys\nsys.exit(3)")
check(r["status"] == "error" and error_type(r) == "SystemExit", "SystemExit is an error...")
r = k.exec("x")
check(plain(r) == "5", "...and the kernel lives on")

# --- output
r = k.exec("import sys\nprint('out')\nprint('err', file=sys.stderr)")
check(r["stdout"] == "out\n" and r["stderr"] == "err\n", "stdout and stderr are separate")
r = k.exec("import sys\nsys.stdout.write('no newline')")
check(r["stdout"] == "no newline", "a partial line is flushed before done")
r = k.exec("import subprocess\nsubprocess.run(['echo', 'hi'])\nNone")
check(r["stdout"] == "hi\n", "subprocess output lands in stdout")

# --- rich output
r = k.exec("class H:\n    def _repr_html_(self):\n        return '<b>hi</b>'\nH()")
check((r["value"] or {}).get("text/html") == "<b>hi</b>" and "H object" in plain(r),
      "_repr_html_ gives text/html next to text/plain")
r = k.exec("class P:\n    def _repr_png_(self):\n        return b'\\x89PNG'\nP()")
check((r["value"] or {}).get("image/png") == base64.b64encode(b"\x89PNG").decode(),
      "_repr_png_ bytes are base64")
r = k.exec("class B:\n    def _repr_mimebundle_(self, include=None, exclude=None):\n"
           "        return {'text/plain': 'bee', 'application/json': {'a': 1}}\nB()")
check(r["value"] == {"text/plain": "bee", "application/json": {"a": 1}}, "_repr_mimebundle_")
r = k.exec("class Bad:\n    def _repr_html_(self):\n        raise ValueError('nope')\nBad()")
check(r["status"] == "ok" and "Bad object" in plain(r) and "text/html" not in r["value"]
      and "nope" in r["stderr"], "a failing _repr_html_ is skipped, with a note on stderr")
r = k.exec("H")
check(set(r["value"]) == {"text/plain"}, "a class is shown by repr only")
r = k.exec("display(H(), 42)\nprint('after')")
check(r["status"] == "ok" and len(r["displays"]) == 2 and r["value"] is None,
      "display() sends one display frame per object")
if len(r["displays"]) == 2:
    d0, d1 = r["displays"]
    check(d0["id"] == "c%d" % k.next_id and d0["data"].get("text/html") == "<b>hi</b>"
          and d1["data"] == {"text/plain": "42"}, "display frames carry the call id and bundles")

# --- top-level await
r = k.exec("import asyncio\nawait asyncio.sleep(0)\n42")
check(r["status"] == "ok" and plain(r) == "42", "top-level await")
r = k.exec("async def h():\n    return 7\nawait h()")
check(plain(r) == "7", "an awaited final expression gives its value")
r = k.exec("h()")
check("coroutine" in (plain(r) or ""), "a coroutine not awaited is a value, as in the REPL")
r = k.exec("await asyncio.sleep(0)\n1 / 0")
check(error_type(r) == "ZeroDivisionError" and "base_events" not in r["error"]["traceback"],
      "errors in an await cell, without asyncio frames")

# --- interrupts
t0 = time.time()
r = k.exec("import time\ntime.sleep(100)", interrupt_after=0.5)
check(r["status"] == "interrupted" and error_type(r) == "KeyboardInterrupt" and time.time() - t0 < 5,
      "interrupt stops time.sleep: %s" % r["status"])
check("on_sigint" not in r["error"]["traceback"] and "time.sleep(100)" in r["error"]["traceback"],
      "the interrupt's traceback shows the user's line, not the kernel's handler")
r = k.exec("x")
check(plain(r) == "5", "globals survive an interrupt")
r = k.exec("n = 0\nwhile True:\n    n += 1", interrupt_after=0.5)
check(r["status"] == "interrupted", "interrupt stops a pure-Python busy loop")
r = k.exec("n > 0")
check(plain(r) == "True", "the busy loop's progress is kept")
r = k.exec("await asyncio.sleep(100)", interrupt_after=0.5)
check(r["status"] == "interrupted", "interrupt stops an awaiting cell")
r = k.exec("await asyncio.sleep(0.3)\n'again'")
check(r["status"] == "ok" and plain(r) == "'again'", "the event loop works after an interrupt")
k.interrupt()
time.sleep(0.3)
r = k.exec("x")
check(r["status"] == "ok" and plain(r) == "5", "an interrupt between calls is ignored")
for i in range(5):  # interrupts racing with the end of quick calls must not kill the kernel
    k.send({"op": "exec", "id": "race%d" % i, "code": "sum(range(%d))" % (i * 20000)})
    k.interrupt()
    frame = k.recv()
    check(frame["type"] == "done" and frame["id"] == "race%d" % i
          and frame["status"] in ("ok", "interrupted"), "interrupt racing call %d: %s" % (i, frame["status"]))
r = k.exec("x")
check(plain(r) == "5", "the kernel survives interrupts racing with calls")

# --- namespace hygiene and reset
k.exec("with open('keep.txt', 'w') as f:\n    f.write('kept')")
r = k.reset()
check(r == {"type": "done", "id": None, "status": "ok"}, "reset answers done with a null id")
r = k.exec("sorted(dir())")
check(plain(r) == "['__builtins__', '__name__', 'display']", "a fresh namespace: %s" % plain(r))
r = k.exec("mine = 1\nsorted(dir())")
check(plain(r) == "['__builtins__', '__name__', 'display', 'mine']", "user names only: %s" % plain(r))
r = k.exec("x")
check(error_type(r) == "NameError", "reset forgets globals")
r = k.exec("math")
check(error_type(r) == "NameError", "reset forgets imports")
r = k.exec("with open('keep.txt') as f:\n    kept = f.read()\nkept")
check(plain(r) == "'kept'", "files in the cwd survive reset")
r = k.exec("__name__")
check(plain(r) == "'__main__'", "__name__ is __main__")
r = k.exec("import pickle\nclass Pt:\n    pass\ntype(pickle.loads(pickle.dumps(Pt()))).__name__")
check(plain(r) == "'Pt'", "classes defined in cells pickle (sys.modules['__main__'] is the namespace)")
r = k.exec("import os\nos.get_inheritable(3) if os.path.exists('/proc/self/fd/3') else False")
check(plain(r) == "False", "the control socket is not inherited by subprocesses")

# --- third-party rich output
if has_module(k, "pandas"):
    r = k.exec("import pandas as pd\npd.DataFrame({'a': [1, 2]})")
    v = r["value"] or {}
    check(r["status"] == "ok" and "<table" in v.get("text/html", "") and "a" in v.get("text/plain", ""),
          "a pandas DataFrame gives text/html and text/plain")
else:
    skip("DataFrame bundle", "pandas not installed")

if has_module(k, "matplotlib"):
    def is_png(d):
        return base64.b64decode(d["data"].get("image/png", ""))[:8] == b"\x89PNG\r\n\x1a\n"

    r = k.exec("import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()\nprint('shown')", timeout=60)
    check(r["status"] == "ok" and len(r["displays"]) == 1 and is_png(r["displays"][0]),
          "plt.show() sends one image/png display frame (%s, %d)" % (r["status"], len(r["displays"])))
    r = k.exec("plt.figure()\nplt.plot([3, 1])\nplt.figure()\nplt.bar([1], [2]);")
    check(len(r["displays"]) == 2 and all(is_png(d) for d in r["displays"]),
          "figures left open at the end of a call are sent")
    r = k.exec("plt.get_fignums()")
    check(plain(r) == "[]", "and closed")
    r = k.exec("fig, ax = plt.subplots()\nfig")
    check(r["value"].get("image/png") and not r["displays"], "a Figure value is a PNG, sent once")
    r = k.exec("import matplotlib\nmatplotlib.get_backend()")
    check(plain(r) == "'agg'", "backend Agg: %s" % plain(r))
else:
    skip("plt.show()", "matplotlib not installed")

# --- leaving
r = k.exec("1")
k.close()
check(k.proc.returncode == 0 and k.proc.stderr.read() == b"", "EOF on fd 3: exit 0, quietly")

k = Kernel("python")
k.ours.sendall(struct.pack("<I", 5) + b"nope!")
try:
    k.proc.wait(timeout=5)
except subprocess.TimeoutExpired:
    k.proc.kill()
    k.proc.wait()
err = k.proc.stderr.read().decode()
check(k.proc.returncode == 2 and "JSON" in err, "a malformed frame: a message and exit 2 (%r)" % err)
k.ours.close()

k = Kernel("python")
k.send({"op": "exec", "id": "busy", "code": "while True: pass"})
time.sleep(0.2)
k.ours.close()
try:
    k.proc.wait(timeout=5)
except subprocess.TimeoutExpired:
    k.proc.kill()
    k.proc.wait()
check(k.proc.returncode == 0, "EOF during a busy call still ends the kernel")

done()
