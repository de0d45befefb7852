"""Check one `hutch agent --json` trace against its entry in tasks.json.

usage: check_task.py TASKS_JSON ID TRACE_FILE STDERR_FILE
Prints one line per failed expectation; exits 1 if there is any.
"""
import json
import re
import sys

LOG_LINE = re.compile(r"^\[pipeline pipe_[0-9a-f]{16}\] \[[A-Z][a-z]+\] \[attempt \d+/\d+\] .+")


def problems(task, trace, stderr):
    out = []
    attempts = trace.get("attempts", [])
    if trace.get("status") != task["expect"]:
        out.append("status %r, expected %r (last diagnosis: %s)" % (
            trace.get("status"), task["expect"], json.dumps(trace.get("last_diagnosis"))))
    if "attempts" in task and trace.get("attempts_used") != task["attempts"]:
        out.append("%r attempts, expected %r" % (trace.get("attempts_used"), task["attempts"]))
    output = (trace.get("output") or "").rstrip("\n")
    if "stdout" in task and output != task["stdout"]:
        out.append("output %r, expected %r" % (output, task["stdout"]))
    if "stdout_contains" in task and task["stdout_contains"] not in output:
        out.append("output %r lacks %r" % (output, task["stdout_contains"]))
    diags = [a["diagnosis"] for a in attempts if a.get("diagnosis")]
    if "categories" in task and [d["category"] for d in diags] != task["categories"]:
        out.append("categories %r, expected %r" % ([d["category"] for d in diags], task["categories"]))
    if "rules" in task and [d.get("rule") for d in diags] != task["rules"]:
        out.append("rules %r, expected %r" % ([d.get("rule") for d in diags], task["rules"]))
    if "category" in task and (trace.get("last_diagnosis") or {}).get("category") != task["category"]:
        out.append("last diagnosis %s, expected category %r" % (
            json.dumps(trace.get("last_diagnosis")), task["category"]))
    if task["expect"] == "failed" and not (trace.get("last_diagnosis") or {}).get("root_cause"):
        out.append("a failure must carry the last diagnosis's root cause")
    for a in attempts:
        if a.get("run") and a.get("network", {}).get("run") != "none":
            out.append("attempt %d ran under %r, not none" % (a["attempt"], a.get("network")))
    if task.get("install_policy"):
        installs = [a.get("network", {}).get("install") for a in attempts if a.get("install")]
        if not installs or any(p != task["install_policy"] for p in installs):
            out.append("install steps ran under %r, not %r" % (installs, task["install_policy"]))
    if task.get("egress_denied"):
        denied = [e for a in attempts for e in ((a.get("run") or {}).get("egress") or [])
                  if e.get("verdict") == "denied"]
        if not denied:
            out.append("no denied egress in the trace")
    runs = [(a["artifact"]["code"], a["artifact"]["install_command"]) for a in attempts if a.get("artifact")]
    if len(runs) != len(set(runs)):
        out.append("a retry ran the same code with the same install step as an earlier attempt")
    lines = [l for l in stderr.splitlines() if l.startswith("[pipeline")]
    if not lines or not all(LOG_LINE.match(l) for l in lines):
        out.append("progress lines do not follow [pipeline ID] [Role] [attempt n/N]: %r" % lines[:3])
    return out


def main():
    tasks = {t["id"]: t for t in json.load(open(sys.argv[1]))}
    task = tasks[sys.argv[2]]
    try:
        trace = json.load(open(sys.argv[3]))
    except ValueError as e:
        print("the trace is not JSON: %s" % e)
        return 1
    found = problems(task, trace, open(sys.argv[4]).read())
    for p in found:
        print(p)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
