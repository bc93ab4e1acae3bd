#!/usr/bin/env python3
"""llm_chat_server.py: a loopback OpenAI-compatible chat-completions server for llm_test.sh.

  llm_chat_server.py PORTFILE LOGFILE MAX_REQUESTS
Listens on 127.0.0.1 (an ephemeral port, written to PORTFILE), answers at most MAX_REQUESTS
POSTs to /v1/chat/completions, then exits; it also exits after 60 s idle. Each answer proposes
configs of the copy recipe, wrapped in a code fence as models do. It checks the request's shape
(model, messages, Authorization) and logs one JSON line per request to LOGFILE.
"""
import http.server
import json
import sys

PROPOSALS = [
    {"VEC_BYTES": 16, "ILP": 2, "BLOCK": 256, "GRID_STRIDE": True, "MIN_BLOCKS": 2},
    {"VEC_BYTES": 16, "ILP": 4, "BLOCK": 512, "GRID_STRIDE": False, "MIN_BLOCKS": 1},
    {"VEC_BYTES": 8, "ILP": 4, "BLOCK": 256, "GRID_STRIDE": True, "MIN_BLOCKS": 1},
]


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        n = int(self.headers.get("Content-Length", 0))
        body = json.loads(self.rfile.read(min(n, 4 << 20)))
        user = json.loads(body["messages"][-1]["content"])
        entry = {"path": self.path, "model": body.get("model"),
                 "auth": self.headers.get("Authorization"),
                 "roles": [m["role"] for m in body["messages"]],
                 "request_version": user.get("version"), "budget": user.get("budget")}
        with open(sys.argv[2], "a") as f:
            f.write(json.dumps(entry) + "\n")
        if self.path != "/v1/chat/completions":
            self.send_error(404)
            return
        k = max(1, min(len(PROPOSALS), user.get("budget", 1)))
        answer = {"version": 1, "proposals": [
            {"kind": "params", "values": v, "rationale": "loopback model: wide vectors"}
            for v in PROPOSALS[:k]]}
        content = "Here you go:\n```json\n" + json.dumps(answer) + "\n```"
        out = json.dumps({"id": "cmpl-1", "object": "chat.completion", "model": body.get("model"),
                          "choices": [{"index": 0, "finish_reason": "stop",
                                       "message": {"role": "assistant", "content": content}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


def main():
    srv = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    srv.timeout = 60
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    import os
    os.rename(sys.argv[1] + ".tmp", sys.argv[1])
    for _ in range(int(sys.argv[3])):
        srv.handle_request()


if __name__ == "__main__":
    main()
