"""A local OpenAI-compatible chat completions server with scripted replies.

usage: fake_llm.py SCRIPT_JSON PORT_FILE LOG_FILE
Each POST /v1/chat/completions takes the next step of the script:
  {"status": 200, "content": OBJECT_OR_STRING, "delay": SECONDS,
   "usage": [prompt, completion, cached]}
A step's content is sent as choices[0].message.content (objects as JSON
text, strings as they are: a partial JSON reply is a string). Every request
is logged as one JSON line: the body, and whether the Authorization header
carried the key in $FAKE_LLM_KEY (the key itself is never written).
"""
import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SCRIPT = json.load(open(sys.argv[1]))
LOG = sys.argv[3]
STEP = [0]


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        auth = self.headers.get("Authorization", "")
        with open(LOG, "a") as f:
            f.write(json.dumps({
                "path": self.path,
                "bearer_ok": auth == "Bearer " + os.environ.get("FAKE_LLM_KEY", ""),
                "body": json.loads(body),
            }) + "\n")
        if STEP[0] >= len(SCRIPT):
            self.reply(500, {"error": {"message": "script exhausted"}})
            return
        step = SCRIPT[STEP[0]]
        STEP[0] += 1
        time.sleep(step.get("delay", 0))
        status = step.get("status", 200)
        if status != 200:
            self.reply(status, {"error": {"message": "scripted %d" % status}})
            return
        content = step.get("content")
        if not isinstance(content, str):
            content = json.dumps(content)
        p, c, cached = step.get("usage", [120, 40, 100])
        self.reply(200, {
            "id": "chatcmpl-fake", "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c,
                      "prompt_tokens_details": {"cached_tokens": cached}},
        })

    def reply(self, status, obj):
        data = json.dumps(obj).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (its timeout): that is the point


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(sys.argv[2] + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.rename(sys.argv[2] + ".tmp", sys.argv[2])
server.serve_forever()
