"""operator/webhookserver.py and operator/admission.py over real TLS on loopback: what an unauthenticated client
can hold, and what a review is answered (issue 23 item 9). The operator-level flood is
tests/integration/test_webhook_flood.py."""
from __future__ import annotations

import asyncio
import dataclasses
import json
import ssl
import tracemalloc
from pathlib import Path

import pytest
from homecluster_lab import webhookflood as flood
from support import objects

from homecluster import tls
from homecluster.kube.cache import CLAIMS, SLOTS
from homecluster.kube.store import Store
from homecluster.lifecycle.context import Context
from homecluster.operator.admission import routes
from homecluster.operator.controller import Controller
from homecluster.operator.webhookserver import CertificateFiles, Limits, WebhookServer

LIMITS = Limits(max_connections=8, header_seconds=0.5, body_seconds=0.5, write_seconds=0.5, max_body_bytes=4096)
CLAIM_PATH = "/nodeclaim-v2alpha1.kb.io"


def claim(name: str, slot: str = "worker-01", phase: str | None = None) -> dict:
    """A claim as the API server holds it: support.objects' claim with its uid and resourceVersion."""
    return objects.claim(name, slot, phase, metadata={"uid": f"uid-{name}", "resourceVersion": "1"})


@pytest.fixture
async def server(tmp_path):
    srv = await start_server(tmp_path, LIMITS)
    yield srv
    await srv.stop()


@pytest.fixture
async def patient_server(tmp_path):
    """The same server with a head deadline that no handshake outlasts, however loaded the machine: what it
    counts is evictions, not timeouts (a 0.5 s deadline closed early idle connections itself at load 12, and
    fewer than 22 were evicted)."""
    srv = await start_server(tmp_path, dataclasses.replace(LIMITS, header_seconds=120.0))
    yield srv
    await srv.stop()


async def start_server(tmp_path: Path, limits: Limits) -> WebhookServer:
    ca = tls.make_ca("test-webhook-ca")
    cert, key = tls.issue(ca, "webhook", ["127.0.0.1"]).write(tmp_path, "webhook")
    controller = Controller(Context(client=None, store=Store()))  # type: ignore[arg-type]
    controller.ctx.store.apply(CLAIMS, claim("worker-01-a", phase="booting"))
    controller.ctx.store.apply(SLOTS, {"metadata": {"name": "worker-05", "resourceVersion": "2",  # pruned from Git
                                                    "deletionTimestamp": "2026-03-04T09:40:00Z",
                                                    "finalizers": ["infra.homecluster.dev/slot-release"]},
                                       "spec": {"groupRef": "workers"}})
    srv = WebhookServer("127.0.0.1", 0, CertificateFiles(str(cert), str(key)), routes(controller), limits)
    await srv.start()
    return srv


def address(srv: WebhookServer) -> str:
    host, port = srv.address
    return f"{host}:{port}"


async def post(srv: WebhookServer, path: str, body: bytes, headers: bytes = b"") -> tuple[int, bytes]:
    host, port = srv.address
    reader, writer = await asyncio.open_connection(host, port, ssl=flood.client_context())
    try:
        writer.write(b"POST %s HTTP/1.1\r\nHost: x\r\n%sContent-Length: %d\r\n\r\n%s"
                     % (path.encode(), headers, len(body), body))
        await writer.drain()
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
        length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
        return int(head.split(b" ")[1]), await asyncio.wait_for(reader.readexactly(length), 5)
    finally:
        writer.transport.abort()


def review(obj: dict, operation: str = "CREATE", uid: str = "r-1") -> bytes:
    return json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                       "request": {"uid": uid, "operation": operation, "object": obj}}).encode()


async def test_a_second_live_claim_is_refused_with_the_field_cause_and_the_reviews_uid(server):
    code, body = await post(server, CLAIM_PATH, review(claim("worker-01-b"), uid="abc"))
    response = json.loads(body)["response"]
    assert code == 200 and response["uid"] == "abc" and response["allowed"] is False
    assert response["status"]["message"] == ('spec.slotRef: Forbidden: slot "worker-01" already has the live '
                                             'NodeClaim "worker-01-a" in phase "booting": one live claim per slot')
    assert response["status"]["details"]["causes"][0]["field"] == "spec.slotRef"
    code, body = await post(server, CLAIM_PATH, review(claim("worker-02-a", slot="worker-02")))
    assert json.loads(body)["response"] == {"uid": "r-1", "allowed": True}


async def test_a_claim_on_a_slot_being_removed_is_refused_with_the_exact_message(server):
    code, body = await post(server, CLAIM_PATH, review(claim("worker-05-a", slot="worker-05")))
    response = json.loads(body)["response"]
    assert code == 200 and response["allowed"] is False
    assert response["status"]["message"] == ('spec.slotRef: Forbidden: slot "worker-05" is being removed (it is '
                                             'marked for deletion): no new claim may start on it; name another slot '
                                             'in spec.slotRef')
    assert response["status"]["details"]["causes"][0]["field"] == "spec.slotRef"


async def test_a_group_off_the_allow_list_is_refused_naming_the_field(server):
    group = {"metadata": {"name": "pool-a", "uid": "g"}, "spec": {"jobs": {"image": "evil/runner:1"}}}
    code, body = await post(server, "/group-v2alpha1.kb.io", review(group, "UPDATE"))
    response = json.loads(body)["response"]
    assert response["allowed"] is False and response["status"]["code"] == 403
    assert response["status"]["message"].startswith('spec.jobs.image: Forbidden: image "evil/runner:1"')


@pytest.mark.parametrize("path, body, headers, code", [
    (CLAIM_PATH, b"x" * 5000, b"", 413),  # over max_body_bytes: refused before it is read
    (CLAIM_PATH, b"{}", b"Transfer-Encoding: chunked\r\n", 501),
    (CLAIM_PATH, b"not json", b"", 400),
    (CLAIM_PATH, b"[" * 4000, b"", 400),  # nested too deep for the parser: a 400, not a crash
    (CLAIM_PATH, b'{"request": {"object": {}}}', b"", 400),  # no uid
    ("/elsewhere", b"{}", b"", 404),
    (CLAIM_PATH, b"x", b"X-Big: " + b"a" * 20000 + b"\r\n", 431),
])
async def test_what_is_no_review_is_refused_by_the_server(server, path, body, headers, code):
    assert (await post(server, path, body, headers))[0] == code


async def test_idle_and_slow_connections_are_closed_within_their_read_timeouts_and_said_so(server, caplog):
    server.report_seconds = 0.0
    held = await flood.hold(address(server), flood.client_context(), {"idle": 2, "slow-headers": 2, "slow-body": 2})
    assert len(held.conns) == 6

    async def none_open() -> None:
        while await held.open_count():
            await asyncio.sleep(0.05)

    await asyncio.wait_for(none_open(), 5)  # header/body timeouts of 0.5 s
    assert server.open_connections == 0 and server.counters.timed_out == 6
    held.close()
    warnings = [r.getMessage() for r in caplog.records if r.name == "homecluster.webhook" and r.levelname == "WARNING"]
    assert warnings and "closed for sending too slowly" in warnings[-1] and "The webhook port" in warnings[-1]
    assert sum(int(w.split(" connections were closed to make room, ")[1].split()[0]) for w in warnings) == 6


async def test_beyond_max_connections_the_oldest_idle_one_makes_room_and_reviews_are_still_answered(
        patient_server):
    server = patient_server
    held = await flood.hold(address(server), flood.client_context(), {"idle": 30}, parallel=1)
    assert server.open_connections <= LIMITS.max_connections and server.counters.evicted >= 22
    assert server.counters.timed_out == 0  # every connection closed was evicted to make room
    code, body = await post(server, CLAIM_PATH, review(claim("worker-02-a", slot="worker-02")))
    assert code == 200 and json.loads(body)["response"]["allowed"] is True
    held.close()


async def test_forged_reviews_with_fresh_uids_leave_nothing_behind(server):
    ctx = flood.client_context()
    await flood.forge(address(server), ctx, 200, connections=4)  # warm up: pools, caches, the SSL context
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        answers = await flood.forge(address(server), ctx, 2000, connections=4)
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    grown = sum(stat.size_diff for stat in after.compare_to(before, "filename")
                if "homecluster/operator" in stat.traceback[0].filename)
    assert answers == {200: 2000}
    assert grown < 20_000, f"the server's own code holds {grown} more bytes after 2,000 forged reviews"
    assert server.open_connections <= 4


async def _served_certificate(srv: WebhookServer) -> bytes:
    host, port = srv.address
    _, writer = await asyncio.open_connection(host, port, ssl=flood.client_context())
    try:
        return writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
    finally:
        writer.transport.abort()


async def test_a_renewed_certificate_is_served_from_the_next_connection_and_a_broken_one_is_not(server, tmp_path):
    first = await _served_certificate(server)
    renewed = tls.issue(tls.make_ca("renewed-ca"), "webhook", ["127.0.0.1"])
    renewed.write(tmp_path, "webhook")  # the files the server was started with
    second = await _served_certificate(server)
    assert second != first and ssl.DER_cert_to_PEM_cert(second).strip() == renewed.cert_pem.decode().strip()
    (tmp_path / "webhook.key").write_text("half-written")
    assert await _served_certificate(server) == second  # the previous pair stays in use


@pytest.mark.lab
async def test_an_operator_whose_webhook_port_is_taken_stops_naming_the_port_and_the_fix(tmp_path):
    """Without reuse_port (kopf's server set it, so a second process could share the port and take its calls),
    a taken port is an error: the operator stops rather than retrying its startup (which would fill the cache
    and start the workers again)."""
    import socket
    import sys

    from homecluster_lab.apiserver import LabAPIServer

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    try:
        async with LabAPIServer(crd_dir=Path(__file__).resolve().parents[2] / "config" / "crd",
                                workdir=tmp_path / "api") as api:
            await api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "homecluster-system"}})
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "homecluster", "run", "--kubeconfig", str(api.kubeconfig_path),
                "--namespace", "homecluster-system", "--no-provider", "--webhook-address", f"127.0.0.1:{port}",
                "--webhook-self-signed-dir", str(tmp_path / "certs"),
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
            try:
                output, _ = await asyncio.wait_for(proc.communicate(), 60)
            finally:
                if proc.returncode is None:
                    proc.kill()
                    await proc.wait()
    finally:
        taken.close()
    assert proc.returncode != 0
    assert f"cannot listen on 127.0.0.1:{port}" in output.decode() and "--webhook-address" in output.decode()
