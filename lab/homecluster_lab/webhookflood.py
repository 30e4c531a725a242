"""An unauthenticated flood of the operator's webhook port, as anyone who can reach it could send (issue 23 item 9).

Three kinds of held connection, none of which needs a credential: `idle` (a finished TLS handshake, then
nothing), `slow-headers` (half a request head, then nothing) and `slow-body` (a whole head announcing a body of
`SLOW_BODY_BYTES`, then a few bytes of it). And forged AdmissionReviews: Group UPDATEs, each for an object with
a fresh uid, over a few keep-alive connections. Loopback only; every count and wait is bounded by its caller.

`rss_bytes(pid)` reads a process's resident set from /proc; `Held.open_count()` says how many held connections
the server has not closed yet. Used by tests/integration/test_webhook_flood.py and benchmarks/webhook_flood.py.
"""
from __future__ import annotations

import asyncio
import json
import ssl
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

KINDS = ("idle", "slow-headers", "slow-body")
SLOW_BODY_BYTES = 1000


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"/proc/{pid}/status has no VmRSS line")


def client_context() -> ssl.SSLContext:
    """TLS without verifying the server: an attacker does not care whose certificate it is."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def _split(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host, int(port)


@dataclass
class Held:
    """The flood's open connections: (reader, writer) pairs, and how many could not be opened at all."""

    conns: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = field(default_factory=list)
    failed: int = 0

    async def open_count(self) -> int:
        """Connections the server has not closed yet (what it sent before closing is read and dropped)."""
        for reader, _ in self.conns:
            try:
                while reader.exception() is None and not reader.at_eof() and reader._buffer:  # type: ignore[attr-defined]
                    await reader.read(65536)
            except (OSError, ssl.SSLError):
                pass
        return sum(1 for reader, writer in self.conns
                   if not reader.at_eof() and not writer.is_closing() and reader.exception() is None)

    def close(self) -> None:
        for _, writer in self.conns:
            writer.transport.abort()
        self.conns.clear()


async def _open(address: str, ctx: ssl.SSLContext, kind: str, timeout: float) -> tuple[Any, Any]:
    host, port = _split(address)
    reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port, ssl=ctx), timeout)
    if kind == "slow-headers":
        writer.write(b"POST /group-v2alpha1.kb.io HTTP/1.1\r\nHost: x\r\nContent-Ty")
    elif kind == "slow-body":
        writer.write(b"POST /group-v2alpha1.kb.io HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n{\"apiVersion\"" % SLOW_BODY_BYTES)
    await writer.drain()
    return reader, writer


async def hold(address: str, ctx: ssl.SSLContext, counts: dict[str, int], *, parallel: int = 50,
               timeout: float = 10.0) -> Held:
    """Open counts[kind] connections of each kind, `parallel` handshakes at a time."""
    held = Held()
    gate = asyncio.Semaphore(parallel)

    async def one(kind: str) -> None:
        async with gate:
            try:
                held.conns.append(await _open(address, ctx, kind, timeout))
            except (OSError, ssl.SSLError, asyncio.TimeoutError, asyncio.IncompleteReadError):
                held.failed += 1

    await asyncio.gather(*(one(kind) for kind in KINDS for _ in range(counts.get(kind, 0))))
    return held


def forged_review() -> dict[str, Any]:
    """A Group UPDATE for an object nobody wrote, with fresh uids: what kopf used to remember forever."""
    uid = str(uuid.uuid4())
    obj = {"apiVersion": "infra.homecluster.dev/v2alpha1", "kind": "Group",
           "metadata": {"name": f"forged-{uid[:8]}", "uid": uid}, "spec": {"minSize": 0, "maxSize": 1}}
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": str(uuid.uuid4()), "operation": "UPDATE", "object": obj, "oldObject": obj,
                        "userInfo": {"username": "forger"}, "name": obj["metadata"]["name"],
                        "kind": {"group": "infra.homecluster.dev", "version": "v2alpha1", "kind": "Group"},
                        "resource": {"group": "infra.homecluster.dev", "version": "v2alpha1", "resource": "groups"},
                        "requestKind": {"group": "infra.homecluster.dev", "version": "v2alpha1", "kind": "Group"},
                        "requestResource": {"group": "infra.homecluster.dev", "version": "v2alpha1",
                                            "resource": "groups"}}}


async def _post(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, body: bytes) -> tuple[int, bool]:
    """(status code, whether the server keeps the connection open)."""
    writer.write(b"POST /group-v2alpha1.kb.io HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    length, keep = 0, True
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
        if name.strip().lower() == b"connection" and value.strip().lower() == b"close":
            keep = False
    await reader.readexactly(length)
    return int(head.split(b" ", 2)[1]), keep


async def forge(address: str, ctx: ssl.SSLContext, count: int, *, connections: int = 8,
                timeout: float = 10.0) -> dict[str, int]:
    """Send `count` forged reviews over `connections` keep-alive connections (a new one when the server closes
    one); {status code: how many}, with 0 for a review that got no answer."""
    host, port = _split(address)
    answers: dict[int, int] = {}
    left = [count]

    async def worker() -> None:
        conn = None
        while left[0] > 0:
            left[0] -= 1
            body = json.dumps(forged_review()).encode()
            try:
                if conn is None:
                    conn = await asyncio.wait_for(asyncio.open_connection(host, port, ssl=ctx), timeout)
                code, keep = await asyncio.wait_for(_post(*conn, body), timeout)
                if not keep:
                    conn[1].transport.abort()
                    conn = None
            except (OSError, ssl.SSLError, asyncio.TimeoutError, asyncio.IncompleteReadError, ValueError):
                code = 0
                if conn is not None:
                    conn[1].transport.abort()
                conn = None
            answers[code] = answers.get(code, 0) + 1
        if conn is not None:
            conn[1].transport.abort()

    await asyncio.gather(*(worker() for _ in range(connections)))
    return answers
