"""A minimal Redfish SessionService, as WSGI middleware in front of the sushy-tools emulator (which has none).

- The service root gains ``SessionService`` and ``Links.Sessions`` (where sushy looks for the login URL).
- ``POST /redfish/v1/SessionService/Sessions`` with ``{"UserName", "Password"}`` checks them against the
  emulator's own htpasswd file and answers 201 with ``X-Auth-Token`` and ``Location`` (the session's URL).
- A request carrying a known ``X-Auth-Token`` is passed on as the session's user (the emulator itself knows only
  basic auth); an unknown token gets 401. Basic auth still works, as on a real BMC.
- ``DELETE`` of a session's URL ends it (204); ``GET`` of the collection lists the open sessions.
- ``stall_reads`` seconds (0: none) delay every GET of a system made with a session token: a BMC that stops
  answering in the middle of a run, while the session is open.

Every login, logout and authenticated request is appended to ``events`` (JSON lines: event, session id, method,
path, how it was authenticated; never a token or a password), so a test can count logins, logouts and the
sessions left open after the process that used them has exited (``session_report``).
"""
from __future__ import annotations

import base64
import json
import secrets
import threading
import time
from pathlib import Path

SESSIONS = "/redfish/v1/SessionService/Sessions"
SERVICE = "/redfish/v1/SessionService"


def _reply(start_response, status: str, body=None, headers=()):
    data = json.dumps(body).encode() if body is not None else b""
    start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(data))), *headers])
    return [data]


def _unauthorized(start_response, why: str):
    return _reply(start_response, "401 Unauthorized", {"error": {"code": "Base.1.0.GeneralError", "message": why}})


class SessionService:
    """WSGI middleware; ``htpasswd`` is the emulator's user file (bcrypt), ``events`` a JSON-lines file."""

    def __init__(self, app, htpasswd: str, events: Path, stall_reads: float = 0) -> None:
        self.app, self.htpasswd, self.events = app, htpasswd, Path(events)
        self.stall_reads = stall_reads
        self.sessions = {}  # token -> (session id, basic Authorization header value of its user)
        self.lock = threading.Lock()

    def _record(self, **event) -> None:
        with self.lock:
            self.events.parent.mkdir(parents=True, exist_ok=True)
            with open(self.events, "a") as out:
                out.write(json.dumps(event) + "\n")

    def __call__(self, environ, start_response):
        method, path = environ.get("REQUEST_METHOD", "GET"), "/" + environ.get("PATH_INFO", "").strip("/")
        if path == "/redfish/v1" and method == "GET":
            return self._root(environ, start_response)
        if path == SESSIONS and method == "POST":
            return self._login(environ, start_response)
        token = environ.pop("HTTP_X_AUTH_TOKEN", None)
        session_id = None
        if token is not None:
            with self.lock:
                known = self.sessions.get(token)
            if known is None:
                return _unauthorized(start_response, "unknown or ended session")
            session_id, environ["HTTP_AUTHORIZATION"] = known
        self._record(event="request", session=session_id, method=method, path=path,
                     auth="token" if token is not None else ("basic" if "HTTP_AUTHORIZATION" in environ else "none"))
        if self.stall_reads and token is not None and method == "GET" and "/Systems/" in path:
            time.sleep(self.stall_reads)
        if path.startswith(SERVICE):
            if token is None and not self._basic_ok(environ.get("HTTP_AUTHORIZATION", "")):
                return _unauthorized(start_response, "authorization required")
            return self._service(start_response, method, path)
        return self.app(environ, start_response)

    def _root(self, environ, start_response):
        captured = {}

        def capture(status, headers, exc_info=None):
            captured["status"], captured["headers"] = status, headers

        body = json.loads(b"".join(self.app(environ, capture)))
        body["SessionService"] = {"@odata.id": SERVICE}
        body.setdefault("Links", {})["Sessions"] = {"@odata.id": SESSIONS}
        return _reply(start_response, captured["status"], body)

    def _login(self, environ, start_response):
        from sushy_tools import error
        from sushy_tools.emulator import auth_basic
        try:
            request = json.loads(environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0)) or b"{}")
            user, password = str(request["UserName"]), str(request["Password"])
            auth_basic.authenticate(self.htpasswd, user, password.encode())
        except (ValueError, KeyError, TypeError, error.FishyError):
            self._record(event="login_refused")
            return _unauthorized(start_response, "wrong user name or password")
        token, session_id = secrets.token_hex(16), secrets.token_hex(4)
        basic = "Basic " + base64.b64encode(("%s:%s" % (user, password)).encode()).decode()
        with self.lock:
            self.sessions[token] = (session_id, basic)
        self._record(event="login", session=session_id)
        location = "%s/%s" % (SESSIONS, session_id)
        return _reply(start_response, "201 Created", {"@odata.id": location, "Id": session_id, "UserName": user},
                      headers=[("X-Auth-Token", token), ("Location", location)])

    def _service(self, start_response, method, path):
        """The SessionService's own resources, for an authenticated caller."""
        with self.lock:
            open_ids = {sid: token for token, (sid, _) in self.sessions.items()}
        if method == "GET" and path == SERVICE:
            return _reply(start_response, "200 OK", {"@odata.id": SERVICE, "Id": "SessionService",
                                                     "Sessions": {"@odata.id": SESSIONS}})
        if method == "GET" and path == SESSIONS:
            return _reply(start_response, "200 OK", {"@odata.id": SESSIONS, "Members@odata.count": len(open_ids),
                                                     "Members": [{"@odata.id": "%s/%s" % (SESSIONS, sid)}
                                                                 for sid in sorted(open_ids)]})
        session_id = path[len(SESSIONS) + 1:] if path.startswith(SESSIONS + "/") else None
        if session_id not in open_ids:
            return _reply(start_response, "404 Not Found", {"error": {"message": "no such session"}})
        if method == "GET":
            return _reply(start_response, "200 OK", {"@odata.id": path, "Id": session_id})
        if method == "DELETE":
            with self.lock:
                self.sessions.pop(open_ids[session_id], None)
            self._record(event="logout", session=session_id)
            return _reply(start_response, "204 No Content")
        return _reply(start_response, "405 Method Not Allowed", {"error": {"message": "not allowed"}})

    def _basic_ok(self, header: str) -> bool:
        from sushy_tools import error
        from sushy_tools.emulator import auth_basic
        try:
            user, password = auth_basic.parse_token(header.split(None, 1)[1])
            auth_basic.authenticate(self.htpasswd, user, password)
        except (IndexError, error.FishyError):
            return False
        return True


def session_report(events: Path) -> dict:
    """Logins, logouts, the sessions still open and the authenticated requests, read from an events file."""
    lines = [json.loads(line) for line in Path(events).read_text().splitlines()] if Path(events).exists() else []
    logins = [e["session"] for e in lines if e["event"] == "login"]
    logouts = [e["session"] for e in lines if e["event"] == "logout"]
    return {"logins": len(logins), "logouts": len(logouts), "refused": sum(e["event"] == "login_refused" for e in lines),
            "open": sorted(set(logins) - set(logouts)),
            "requests": [e for e in lines if e["event"] == "request"]}
