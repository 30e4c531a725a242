"""A bearer-token gate in front of the lab API server, for the node modules' api_key option.

The lab API server accepts any token (homecluster_lab.apiserver), so it cannot tell whether a client sent
one. This loopback HTTP proxy answers 401 to a request whose Authorization header is not
``Bearer <token>``, forwards the others unchanged to the server, and records each Authorization
header it saw (what the module really sent).
"""
from __future__ import annotations

import http.client
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit


class TokenGate:
    def __init__(self, upstream: str, token: str) -> None:
        self.upstream = urlsplit(upstream)
        self.token = token
        self.seen = []  # Authorization headers, in order
        gate = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_args):
                pass

            def _forward(self):
                auth = self.headers.get("Authorization", "")
                gate.seen.append(auth)
                if auth != "Bearer %s" % gate.token:
                    body = json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                       "reason": "Unauthorized", "code": 401}).encode()
                    self.send_response(401)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                length = int(self.headers.get("Content-Length") or 0)
                data = self.rfile.read(length) if length else None
                conn = http.client.HTTPConnection(gate.upstream.hostname, gate.upstream.port, timeout=30)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
                conn.request(self.command, self.path, body=data, headers=headers)
                answer = conn.getresponse()
                payload = answer.read()
                self.send_response(answer.status)
                for key, value in answer.getheaders():
                    if key.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
                conn.close()

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _forward

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="token-gate", daemon=True)

    def start(self) -> "TokenGate":
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
