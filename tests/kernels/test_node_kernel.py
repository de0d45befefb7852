"""Tests of kernels/node.js through the harness (TAP). Run: /usr/bin/python3 this file."""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Kernel, check, done  # noqa: E402


def text(r):
    """The text/plain of a done frame's value, or None."""
    return (r.get("value") or {}).get("text/plain")


k = Kernel("node")
check(k.ready.get("language") == "node" and k.ready.get("version", "").startswith("v"),
      "ready names node and its version: %r" % k.ready)

# declarations persist; the final expression is the value
r = k.exec("let a = 1; const b = 2; var c = 3; function f(x) { return x * 10 }\n"
           "class Point { constructor(x) { this.x = x } }")
check(r["status"] == "ok" and r["value"] is None and r["error"] is None,
      "declarations: ok, no value")
r = k.exec("[a, b, c, f(4), new Point(5)]")
check(text(r) == "[ 1, 2, 3, 40, Point { x: 5 } ]", "let/const/var/function/class persist: %r"
      % text(r))
r = k.exec("a += 1; a")
check(text(r) == "2", "a let can be assigned in a later call")
r = k.exec("let a = 'again'; a")
check(r["status"] == "ok" and text(r) == "'again'", "and declared again, as in a console")
check(text(k.exec("'str'")) == "'str'" and text(k.exec("({x: [1, {y: 2}]})")) == "{ x: [ 1, { y: 2 } ] }",
      "values are util.inspect()ed")
check(text(k.exec("{ a: 1 }")) == "{ a: 1 }", "a lone { a: 1 } is an object, as in the REPL")
check(k.exec("undefined")["value"] is None and k.exec("let z = 1")["value"] is None,
      "undefined gives value null")
check(text(k.exec("null")) == "null", "null is a value")

# output
r = k.exec("console.log('out', {k: 1}); console.error('err'); 7")
check(r["stdout"] == "out { k: 1 }\n" and r["stderr"] == "err\n" and text(r) == "7",
      "console.log to stdout, console.error to stderr: %r" % r)
r = k.exec("process.stdout.write('direct\\n'); process.stderr.write('direct-err\\n'); 1")
check(r["stdout"] == "direct\n" and r["stderr"] == "direct-err\n", "process.stdout/stderr too")
r = k.exec("for (let i = 1; i <= 200000; i++) console.log(i)", timeout=20)
check(r["status"] == "ok" and r["stdout"].count("\n") == 200000
      and r["stdout"].endswith("199999\n200000\n"), "200000 lines arrive whole")

# exceptions
r = k.exec("null.x")
e = r["error"] or {}
check(r["status"] == "error" and e.get("type") == "TypeError" and "null" in e.get("message", ""),
      "TypeError is structured: %r" % e)
check("<cell-" in e.get("traceback", "") and "node:inspector" not in e.get("traceback", ""),
      "its traceback names the cell, not the kernel: %r" % e.get("traceback"))
check(e.get("traceback", "").split("\n")[0] in r["stderr"], "and it is on stderr too")
r = k.exec("let = = 1")
check(r["status"] == "error" and (r["error"] or {}).get("type") == "SyntaxError",
      "SyntaxError is structured: %r" % r["error"])
r = k.exec("function g() { throw new RangeError('deep') }\ng()")
check((r["error"] or {}).get("type") == "RangeError" and "at g (" in r["error"]["traceback"],
      "a thrown error keeps the user's frames")
r = k.exec("throw 5")
check(r["status"] == "error" and r["error"]["message"] == "5", "throwing a non-Error: %r"
      % r["error"])
r = k.exec("await Promise.reject(new Error('nope'))")
check(r["status"] == "error" and r["error"]["message"] == "nope", "a rejected await is an error")
r = k.exec("process.exit(3)")
check(r["status"] == "error" and r["error"]["type"] == "ProcessExit",
      "process.exit() is an error, not the end of the kernel")
check(text(k.exec("a")) == "'again'", "the kernel survives all of these with its state")

# top-level await
t = time.time()
r = k.exec("await new Promise(r => setTimeout(r, 10)); 42")
check(text(r) == "42", "top-level await gives the final value: %r" % text(r))
k.exec("const x = await Promise.resolve(5)")
check(text(k.exec("x")) == "5", "declared through await, seen in the next call")

# modules
r = k.exec("const fs = require('fs'); fs.writeFileSync('file.txt', 'hi'); "
           "fs.readFileSync('file.txt', 'utf8')")
check(text(r) == "'hi'", "require('fs') works, relative to the cwd: %r" % r)
with open(os.path.join(k.cwd, "m.mjs"), "w") as f:
    f.write("export const v = 42;\n")
r = k.exec("(await import('./m.mjs')).v + (await import('node:path')).sep.length")
check(text(r) == "43" and r["stderr"] == "", "import() of ESM works, quietly: %r" % r)

# interrupt
t = time.time()
r = k.exec("let n = 0; while (true) { n++ }", timeout=10, interrupt_after=0.5)
check(r["status"] == "interrupted" and time.time() - t < 3,
      "interrupt stops while(true){}: %r in %.1fs" % (r["status"], time.time() - t))
check(text(k.exec("n > 0 && a")) == "'again'", "state survives it")
t = time.time()
r = k.exec("await new Promise(() => {})", timeout=10, interrupt_after=0.5)
check(r["status"] == "interrupted" and time.time() - t < 3, "interrupt abandons a never-resolving await")
r = k.exec("await null; while (true) { n++ }", timeout=10, interrupt_after=0.5)
check(r["status"] == "interrupted", "interrupt stops a busy loop after an await")
r = k.exec("({ [Symbol.for('nodejs.util.inspect.custom')]() { while (true) {} } })",
           timeout=10, interrupt_after=0.5)
check(r["status"] == "interrupted", "interrupt stops a value whose inspection spins")
r = k.exec("setTimeout(() => console.log('late'), 300); await new Promise(() => {})",
           timeout=10, interrupt_after=0.1)
time.sleep(0.5)
r = k.exec("n > 0")
check(text(r) == "true" and r["stdout"] == "late\n",
      "works after the interrupts; callbacks of an abandoned call still run: %r" % r["stdout"])
r = k.exec("setTimeout(() => { throw new Error('in a timer') }, 10); "
           "await new Promise(r => setTimeout(r, 100)); 1")
check(text(r) == "1" and "in a timer" in r["stderr"], "an error in a timer is reported, not fatal")

# reset
r = k.reset()
check(r == {"type": "done", "id": None, "status": "ok"}, "reset answers done: %r" % r)
r = k.exec("[typeof a, typeof f, typeof Point, typeof x]")
check(text(r) == "[ 'undefined', 'undefined', 'undefined', 'undefined' ]",
      "reset forgets declarations: %r" % text(r))
r = k.exec("let a = 'fresh'; require('fs').readFileSync('file.txt', 'utf8') + a")
check(text(r) == "'hifresh'", "files stay and the new context works")

k.close()
check(k.proc.returncode == 0, "EOF on fd 3: exit 0 (%r)" % k.proc.returncode)
rest = k.stderr.take()
check(rest == "", "nothing on stderr at exit: %r" % rest)

# the kernel ends when the daemon goes away, even in a busy call, and on protocol errors
k = Kernel("node")
k.send({"op": "exec", "id": "busy", "code": 'while (true) {}'})
time.sleep(0.3)
k.ours.close()
try:
    k.proc.wait(timeout=5)
except subprocess.TimeoutExpired:
    k.proc.kill()
    k.proc.wait()
check(k.proc.returncode == 0, "EOF during a busy call ends the kernel: %r" % k.proc.returncode)

k = Kernel("node")
k.ours.sendall(b"\x03\x00\x00\x00{x}")
try:
    k.proc.wait(timeout=5)
except subprocess.TimeoutExpired:
    k.proc.kill()
    k.proc.wait()
err = k.proc.stderr.read().decode()
check(k.proc.returncode == 2 and "JSON" in err, "a malformed frame: a message and exit 2 (%r)" % err)

done()
