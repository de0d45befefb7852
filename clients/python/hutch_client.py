"""A client for hutch's HTTP API (`hutch serve`, docs/http.md), shaped like E2B's SDK.

Standard library only. The server and key come from the arguments, else from
$HUTCH_URL (default http://127.0.0.1:7878) and $HUTCH_API_KEY.

    from hutch_client import Sandbox, run

    with Sandbox.create() as sbx:                      # a Python session
        sbx.run_code("x = 41")
        print(sbx.run_code("x + 1").text)               # 42
        sbx.commands.run("echo hi; sleep 1; echo there", on_stdout=print)
        sbx.files.write("data.csv", "a,b\\n1,2\\n")
        print(sbx.files.read("data.csv"))
        sbx.pause(); sbx.resume()
    print(run("print(6*7)").stdout)                     # one fresh sandbox
"""

import base64
import http.client
import json
import os
import urllib.parse

__all__ = ["Sandbox", "run", "HutchError", "NotFoundError", "RateLimitError",
           "Execution", "Result", "ExecutionError", "CommandResult"]

DEFAULT_URL = "http://127.0.0.1:7878"


class HutchError(Exception):
    """An error reply: {"error": {"code", "message"}} with its HTTP status."""

    def __init__(self, status, code, message):
        super().__init__("%s %s: %s" % (status, code, message))
        self.status, self.code, self.message = status, code, message


class NotFoundError(HutchError):
    pass


class RateLimitError(HutchError):
    def __init__(self, status, code, message, retry_after=None):
        super().__init__(status, code, message)
        self.retry_after = retry_after


class _Client:
    """One server and key; a connection per request (requests may stream for minutes)."""

    def __init__(self, url=None, api_key=None, timeout=300):
        self.url = urllib.parse.urlsplit(url or os.environ.get("HUTCH_URL") or DEFAULT_URL)
        self.api_key = api_key if api_key is not None else os.environ.get("HUTCH_API_KEY")
        self.timeout = timeout

    def _conn(self):
        cls = http.client.HTTPSConnection if self.url.scheme == "https" else http.client.HTTPConnection
        return cls(self.url.hostname, self.url.port, timeout=self.timeout)

    def _headers(self, extra=None):
        h = {"Accept": "application/json"}
        if self.api_key:
            h["Authorization"] = "Bearer " + self.api_key
        h.update(extra or {})
        return h

    @staticmethod
    def _raise(resp, body):
        try:
            err = json.loads(body)["error"]
            code, message = err["code"], err["message"]
        except (ValueError, KeyError, TypeError):
            code, message = "EIO", body[:200].decode("utf-8", "replace")
        if resp.status == 404:
            raise NotFoundError(resp.status, code, message)
        if resp.status == 429:
            ra = resp.getheader("Retry-After")
            raise RateLimitError(resp.status, code, message, int(ra) if ra else None)
        raise HutchError(resp.status, code, message)

    def request(self, method, path, body=None, query=None, raw=False):
        """JSON (or raw bytes with raw=True) in and out."""
        if query:
            path += "?" + urllib.parse.urlencode(query)
        headers = self._headers()
        if isinstance(body, (bytes, bytearray)):
            headers["Content-Type"] = "application/octet-stream"
            data = bytes(body)
        elif body is not None:
            headers["Content-Type"] = "application/json"
            data = json.dumps(body).encode()
        else:
            data = None
        conn = self._conn()
        try:
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
            out = resp.read()
        finally:
            conn.close()
        if resp.status >= 400:
            self._raise(resp, out)
        return out if raw else json.loads(out)

    def stream(self, path, body, on_stdout=None, on_stderr=None, on_step=None):
        """POST with Accept: text/event-stream; calls on_stdout/on_stderr with each chunk
        (str) as it arrives and returns the final result (the `result` event)."""
        headers = self._headers({"Accept": "text/event-stream", "Content-Type": "application/json"})
        conn = self._conn()
        try:
            conn.request("POST", path, body=json.dumps(body).encode(), headers=headers)
            resp = conn.getresponse()
            if resp.status >= 400:
                self._raise(resp, resp.read())
            return self._events(resp, on_stdout, on_stderr, on_step)
        finally:
            conn.close()

    @staticmethod
    def _events(resp, on_stdout, on_stderr, on_step=None):
        event, data = None, []
        for raw in resp:
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            if line.startswith(":"):
                continue  # keep-alive
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: "):
                data.append(line[6:])
            elif line == "" and event:
                payload = json.loads("\n".join(data))
                if event == "result":
                    if isinstance(payload.get("error"), dict) and "code" in payload["error"]:
                        raise HutchError(500, payload["error"]["code"], payload["error"]["message"])
                    return payload
                if event == "step":  # an agent step: the object itself
                    if on_step:
                        on_step(payload)
                else:
                    cb = on_stdout if event == "stdout" else on_stderr
                    if cb:
                        cb(payload.get("data", ""))
                event, data = None, []
        raise HutchError(502, "EPIPE", "the stream ended without a result")


class ExecutionError:
    """An exception raised by the code: name, value (message), traceback."""

    def __init__(self, err):
        self.name = err.get("type")
        self.value = err.get("message")
        self.traceback = err.get("traceback")

    def __repr__(self):
        return "ExecutionError(%s: %s)" % (self.name, self.value)


class Result:
    """One rich output: a MIME bundle (text/plain, text/html, image/png...)."""

    def __init__(self, bundle, is_main_result=False):
        self.bundle = dict(bundle or {})
        self.is_main_result = is_main_result
        self.text = self.bundle.get("text/plain")
        self.html = self.bundle.get("text/html")
        self.png = self.bundle.get("image/png")
        self.json = self.bundle.get("application/json")

    def formats(self):
        return list(self.bundle)

    def __repr__(self):
        return "Result(%s)" % ", ".join(self.formats())


class _Logs:
    def __init__(self, stdout, stderr):
        self.stdout, self.stderr = stdout, stderr


class Execution:
    """What run_code returns: results (displays, then the final value), logs, error."""

    def __init__(self, res):
        self.raw = res
        self.results = [Result(d) for d in res.get("display") or []]
        if res.get("value"):
            self.results.append(Result(res["value"], is_main_result=True))
        self.logs = _Logs(res.get("stdout", ""), res.get("stderr", ""))
        err = res.get("error")
        self.error = ExecutionError(err) if isinstance(err, dict) else None
        self.status = res.get("status")
        self.execution_count = None

    @property
    def text(self):
        """The final expression's text/plain, or None."""
        for r in self.results:
            if r.is_main_result:
                return r.text
        return None


class CommandResult:
    def __init__(self, res):
        self.raw = res
        self.stdout = res.get("stdout", "")
        self.stderr = res.get("stderr", "")
        self.exit_code = res.get("exit_code")
        self.status = res.get("status")
        self.error = None if self.exit_code == 0 else res.get("status")


class CommandHandle:
    """A background command: wait() for it, kill() it."""

    def __init__(self, sbx, command_id):
        self._sbx, self.id = sbx, command_id

    def _act(self, body):
        return self._sbx._client.request("POST", "%s/commands/%s" % (self._sbx._path, self.id), body)

    def wait(self, timeout_ms=30000):
        reply = self._act({"action": "wait", "timeout_ms": timeout_ms})
        return CommandResult(reply.get("result") or reply)

    def kill(self):
        return self._act({"action": "signal", "signal": "KILL"})


class Commands:
    def __init__(self, sbx):
        self._sbx = sbx

    def run(self, cmd, on_stdout=None, on_stderr=None, background=False, timeout_ms=None,
            envs=None, cwd=None, stdin=None):
        body = {"command": cmd}
        for k, v in (("timeout_ms", timeout_ms), ("env", envs), ("workdir", cwd), ("stdin", stdin)):
            if v is not None:
                body[k] = v
        path = self._sbx._path + "/commands"
        if background:
            body["background"] = True
            reply = self._sbx._client.request("POST", path, body)
            return CommandHandle(self._sbx, reply["command"]["command_id"])
        if on_stdout or on_stderr:
            return CommandResult(self._sbx._client.stream(path, body, on_stdout, on_stderr))
        return CommandResult(self._sbx._client.request("POST", path, body))

    def list(self):
        return self._sbx._client.request("GET", self._sbx._path + "/commands")["commands"]


class Files:
    def __init__(self, sbx):
        self._sbx = sbx

    def _url(self, suffix=""):
        return self._sbx._path + "/files" + suffix

    def write(self, path, data):
        if isinstance(data, str):
            data = data.encode()
        self._sbx._client.request("PUT", self._url(), bytes(data), {"path": path})

    def read(self, path, format="text"):
        data = self._sbx._client.request("GET", self._url(), query={"path": path}, raw=True)
        return data.decode() if format == "text" else data

    def list(self, path="."):
        return self._sbx._client.request("GET", self._url("/list"), query={"path": path})["entries"]

    def stat(self, path):
        return self._sbx._client.request("GET", self._url("/stat"), query={"path": path})["stat"]

    def make_dir(self, path):
        self._sbx._client.request("POST", self._url("/mkdir"), query={"path": path})

    def remove(self, path, recursive=False):
        q = {"path": path}
        if recursive:
            q["recursive"] = "true"
        self._sbx._client.request("DELETE", self._url(), query=q)

    def exists(self, path):
        try:
            self.stat(path)
            return True
        except NotFoundError:
            return False


class Sandbox:
    """A hutch session: a long-lived sandbox with a language kernel."""

    def __init__(self, client, info):
        self._client = client
        self.info = info
        self.sandbox_id = info["id"]
        self._path = "/v1/sessions/" + self.sandbox_id
        self.commands = Commands(self)
        self.files = Files(self)

    @classmethod
    def create(cls, language="python", *, url=None, api_key=None, limits=None, envs=None,
               labels=None, network=None, idle_timeout_ms=None, ttl_ms=None, timeout=300):
        client = _Client(url, api_key, timeout)
        body = {"language": language}
        for k, v in (("limits", limits), ("env", envs), ("labels", labels), ("network", network),
                     ("idle_timeout_ms", idle_timeout_ms), ("ttl_ms", ttl_ms)):
            if v is not None:
                body[k] = v
        return cls(client, client.request("POST", "/v1/sessions", body)["session"])

    @classmethod
    def connect(cls, sandbox_id, *, url=None, api_key=None, timeout=300):
        client = _Client(url, api_key, timeout)
        return cls(client, client.request("GET", "/v1/sessions/" + sandbox_id)["session"])

    @staticmethod
    def list(*, url=None, api_key=None):
        return _Client(url, api_key).request("GET", "/v1/sessions")["sessions"]

    def run_code(self, code, timeout_ms=None, on_stdout=None, on_stderr=None):
        body = {"code": code}
        if timeout_ms is not None:
            body["timeout_ms"] = timeout_ms
        if on_stdout or on_stderr:
            return Execution(self._client.stream(self._path + "/exec", body, on_stdout, on_stderr))
        return Execution(self._client.request("POST", self._path + "/exec", body))

    def get_info(self):
        self.info = self._client.request("GET", self._path)["session"]
        return self.info

    def pause(self):
        self.info = self._client.request("POST", self._path + "/pause")["session"]

    def resume(self):
        self.info = self._client.request("POST", self._path + "/resume")["session"]

    def reset(self):
        self._client.request("POST", self._path + "/reset")

    def snapshot(self, name):
        return self._client.request("POST", self._path + "/snapshot", {"name": name})["snapshot"]

    def kill(self):
        try:
            self._client.request("DELETE", self._path)
        except NotFoundError:
            pass  # already gone

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.kill()
        return False


class ExecResult(dict):
    """An ExecResult (docs/api.md) as a dict, with attribute access."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def run(code=None, language="python", *, argv=None, url=None, api_key=None, on_stdout=None,
        on_stderr=None, **fields):
    """One fresh sandbox per call: POST /v1/run. fields are ExecRequest fields
    (stdin, files, env, limits, network, labels...). Returns the ExecResult."""
    client = _Client(url, api_key)
    body = dict(fields)
    if argv is not None:
        body["argv"] = list(argv)
    if code is not None:
        body["code"] = code
        body["language"] = language
    if on_stdout or on_stderr:
        return ExecResult(client.stream("/v1/run", body, on_stdout, on_stderr))
    return ExecResult(client.request("POST", "/v1/run", body))


def agent(task, language="python", *, url=None, api_key=None, on_step=None, **fields):
    """The agent (docs/agent.md): POST /v1/agent with a task in English. fields:
    max_attempts, timeout_ms, install_timeout_ms, llm, model, coder_model.
    on_step(step) is called with each step ({"role", "attempt", "message", ...})
    as it happens. Returns the pipeline's trace (a dict; "status" is "success"
    or "failed", "output" what the verified program printed)."""
    client = _Client(url, api_key)
    body = dict(fields, task=task, language=language)
    if on_step:
        return client.stream("/v1/agent", body, on_step=on_step)
    return client.request("POST", "/v1/agent", body)
