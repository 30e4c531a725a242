"""The admission webhooks' HTTPS server: small, bounded, and keeping nothing per request.

Anyone who can reach the port can talk to it without a credential (the API server is the only legitimate
client, and TLS proves the server to it, not the other way round). So every resource a connection can hold
is bounded (issue 23 item 9; kopf's server had no bound, and kopf remembered a memo per object uid of every
UPDATE review, forged ones included):

- at most `max_connections` connections; a new one beyond that closes the oldest one that is not answering a
  request (idle, handshaking, or still sending), so a flood of held connections never locks the API server out;
- the TLS handshake and the request head must arrive within `header_seconds` of the connection, the body
  within `body_seconds`, the answer leave within `write_seconds`; a kept-alive connection may wait
  `idle_seconds` for its next request (longer than Go's idle timeout, so the API server closes it first);
- a head of at most `max_header_bytes`, a body of at most `max_body_bytes` announced by Content-Length
  (no chunked bodies; the API server sends a length), refused before it is read;
- one request at a time per connection, and what a review asked is forgotten once it is answered.

The routes are plain functions from a review's `request` to a refusal (operator/admission.py). The serving
certificate is re-read when its files change (checked at each new connection), so renewals need no restart.
"""
from __future__ import annotations

import asyncio
import json
import logging
import os
import ssl
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger("homecluster.webhook")

Route = Callable[[Mapping[str, Any]], Awaitable[dict[str, Any]]]
REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed", 411: "Length Required",
           413: "Content Too Large", 431: "Request Header Fields Too Large", 500: "Internal Server Error",
           501: "Not Implemented"}


@dataclass(frozen=True)
class Limits:
    max_connections: int = 64  # an API server keeps a few; 64 TLS connections cost a few MB
    header_seconds: float = 2.0  # handshake + head; the webhooks' timeoutSeconds is 5
    body_seconds: float = 2.0
    write_seconds: float = 2.0
    # between two requests on a kept-alive connection: longer than the 90 s after which Go's HTTP client (the
    # API server's) drops an idle connection, so that it is always the client that closes one and never a
    # request that meets a connection we just closed; such connections are the first to make room
    idle_seconds: float = 120.0
    max_header_bytes: int = 16 * 1024
    # an AdmissionReview holds the object and, for an UPDATE, its old copy; a NodeClaim or Group is a few KB,
    # and 1 MiB leaves room for large annotations (kubectl's last-applied) on both
    max_body_bytes: int = 1024 * 1024


class HTTPError(Exception):
    def __init__(self, code: int, text: str) -> None:
        super().__init__(text)
        self.code = code


@dataclass(eq=False)
class _Conn:
    writer: asyncio.StreamWriter
    task: asyncio.Task | None
    busy: bool = False  # answering a request: never evicted


@dataclass
class Counters:
    accepted: int = 0
    evicted: int = 0  # closed to make room for a newer connection
    timed_out: int = 0
    refused: int = 0  # a request answered 4xx/5xx by the server itself
    answered: int = 0


class CertificateFiles:
    """An SSLContext from a certificate and key file, made again when the files change."""

    def __init__(self, certfile: str, keyfile: str) -> None:
        self.certfile, self.keyfile = certfile, keyfile
        self._signature: tuple[Any, ...] | None = None
        self._context: ssl.SSLContext | None = None

    def _stat(self) -> tuple[Any, ...]:
        return tuple((s.st_mtime_ns, s.st_size, s.st_ino) for s in map(os.stat, (self.certfile, self.keyfile)))

    def context(self) -> ssl.SSLContext:
        signature = self._stat()
        if signature != self._signature or self._context is None:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.minimum_version = ssl.TLSVersion.TLSv1_2
            ctx.set_alpn_protocols(["http/1.1"])
            try:
                ctx.load_cert_chain(self.certfile, self.keyfile)
            except (OSError, ssl.SSLError) as exc:
                if self._context is None:
                    raise
                log.warning("webhook certificate %s / key %s unusable (%s): still serving the previous pair",
                            self.certfile, self.keyfile, exc)
                return self._context
            if self._context is not None:
                log.info("webhook certificate %s re-read", self.certfile)
            self._context, self._signature = ctx, signature
        return self._context


@dataclass
class WebhookServer:
    host: str
    port: int
    certificates: CertificateFiles | None  # None: plain HTTP (tests only)
    routes: Mapping[str, Route]
    limits: Limits = field(default_factory=Limits)
    counters: Counters = field(default_factory=Counters)
    report_seconds: float = 60.0  # at most one warning this often about connections shed

    def __post_init__(self) -> None:
        self._conns: dict[_Conn, None] = {}  # insertion order: oldest first
        self._server: asyncio.AbstractServer | None = None
        self._reported = (0, 0, 0)
        self._reported_at = time.monotonic()

    def _report(self) -> None:
        """A warning, at most once per report_seconds, when connections were shed since the last one: the API
        server never holds a connection without a request, so someone else is holding or flooding the port."""
        now = time.monotonic()
        shed = (self.counters.evicted, self.counters.timed_out, self.counters.refused)
        if now - self._reported_at < self.report_seconds or shed == self._reported:
            return
        evicted, timed_out, refused = (a - b for a, b in zip(shed, self._reported))
        log.warning("admission webhooks: in the last %.0f s %d connections were closed to make room, %d closed "
                    "for sending too slowly and %d requests refused as no review: something other than the API "
                    "server holds or floods the port (docs/security.md, \"The webhook port without credentials\")",
                    now - self._reported_at, evicted, timed_out, refused)
        self._reported, self._reported_at = shed, now

    async def start(self) -> None:
        if self.certificates is not None:
            self.certificates.context()  # fail at start on unusable files, not at the first connection
        self._server = await asyncio.start_server(self._connection, self.host, self.port,
                                                  limit=self.limits.max_header_bytes, backlog=128)
        log.info("admission webhooks on https://%s:%d (%s)", self.host, self.address[1], ", ".join(self.routes))

    @property
    def address(self) -> tuple[str, int]:
        assert self._server is not None, "not started"
        return self._server.sockets[0].getsockname()[:2]

    @property
    def open_connections(self) -> int:
        return len(self._conns)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            for conn in list(self._conns):
                conn.writer.transport.abort()
            await self._server.wait_closed()

    def _make_room(self, newest: _Conn) -> bool:
        while len(self._conns) > self.limits.max_connections:
            victim = next((c for c in self._conns if not c.busy and c is not newest), None)
            if victim is None:
                return False
            self._drop(victim)
            self.counters.evicted += 1
        return True

    def _drop(self, conn: _Conn) -> None:
        self._conns.pop(conn, None)
        conn.writer.transport.abort()
        if conn.task is not None and conn.task is not asyncio.current_task():
            conn.task.cancel()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = _Conn(writer, asyncio.current_task())
        self._conns[conn] = None
        self.counters.accepted += 1
        try:
            if not self._make_room(conn):
                return
            async with asyncio.timeout(self.limits.header_seconds):
                if self.certificates is not None:
                    await writer.start_tls(self.certificates.context())
                head = await reader.readuntil(b"\r\n\r\n")
            while True:
                keep = await self._one(reader, writer, conn, head)
                if not keep:
                    return
                async with asyncio.timeout(self.limits.idle_seconds):
                    head = await reader.readuntil(b"\r\n\r\n")
        except TimeoutError:
            self.counters.timed_out += 1
        except asyncio.LimitOverrunError:
            await self._error(writer, HTTPError(431, "the request head is too large"))
        except (OSError, ssl.SSLError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        finally:
            self._conns.pop(conn, None)
            writer.transport.abort()
            self._report()

    async def _one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, conn: _Conn,
                   head: bytes) -> bool:
        try:
            path, length, keep = parse_head(head, self.limits.max_body_bytes)
            async with asyncio.timeout(self.limits.body_seconds):
                body = await reader.readexactly(length)
            route = self.routes.get(path)
            if route is None:
                raise HTTPError(404, f"no webhook at {path[:100]!r}: serve {', '.join(self.routes)}")
            conn.busy = True
            review = await answer(route, body)
        except HTTPError as exc:
            await self._error(writer, exc)
            return False
        payload = json.dumps(review, separators=(",", ":")).encode()
        await self._send(writer, 200, payload, keep)
        self.counters.answered += 1
        conn.busy = False
        return keep

    async def _error(self, writer: asyncio.StreamWriter, exc: HTTPError) -> None:
        self.counters.refused += 1
        try:
            await self._send(writer, exc.code, json.dumps({"error": str(exc)}).encode(), False)
        except (OSError, TimeoutError, ssl.SSLError):
            pass

    async def _send(self, writer: asyncio.StreamWriter, code: int, payload: bytes, keep: bool) -> None:
        writer.write(b"HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
                     b"Connection: %s\r\n\r\n" % (code, REASONS.get(code, "Error").encode(), len(payload),
                                                  b"keep-alive" if keep else b"close") + payload)
        async with asyncio.timeout(self.limits.write_seconds):
            await writer.drain()


def parse_head(head: bytes, max_body: int) -> tuple[str, int, bool]:
    """(path, body length, keep-alive) of a request head, or HTTPError naming what is wrong."""
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise HTTPError(400, "not an HTTP/1.x request line")
    method, target, version = parts
    if method != "POST":
        raise HTTPError(405, f"method {method[:16]!r}: the webhooks take POST")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if line:
            name, sep, value = line.partition(":")
            if not sep:
                raise HTTPError(400, "a header line without a colon")
            headers[name.strip().lower()] = value.strip()
    if "transfer-encoding" in headers:
        raise HTTPError(501, "chunked bodies are not taken: send Content-Length")
    if not headers.get("content-length", "").isdigit():
        raise HTTPError(411, "a review needs a Content-Length")
    length = int(headers["content-length"])
    if length > max_body:
        raise HTTPError(413, f"a review of {length} bytes is over the {max_body}-byte limit")
    connection = headers.get("connection", "").lower()
    keep = connection != "close" if version == "HTTP/1.1" else connection == "keep-alive"
    return target.split("?", 1)[0], length, keep


async def answer(route: Route, body: bytes) -> dict[str, Any]:
    """The AdmissionReview response to a request body, or HTTPError(400) when it is not a review."""
    try:
        review = json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise HTTPError(400, f"the body is not JSON: {str(exc)[:200]}") from None
    request = review.get("request") if isinstance(review, dict) else None
    if not isinstance(request, dict) or not isinstance(request.get("uid"), str) or len(request["uid"]) > 128:
        raise HTTPError(400, "not an AdmissionReview: request.uid (a string of at most 128 characters) is missing")
    try:
        response = await route(request)
    except Exception as exc:  # noqa: BLE001 - a check that fails answers 500 (failurePolicy decides), never hangs
        log.exception("admission check failed on review %s", json.dumps(request["uid"]))
        raise HTTPError(500, f"the check failed: {type(exc).__name__}") from None
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "response": {"uid": request["uid"], **response}}
