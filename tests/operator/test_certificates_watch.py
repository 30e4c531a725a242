"""Self-signed mode hears a change to its objects at once (operator/certwatch.py), against the lab's API server.

The manager runs as `homecluster run` starts it (a first pass, then start()), with its resync and its next
renewal far away: a deleted Secret comes back, and a caBundle that a re-applied webhook configuration lost is
set again, within seconds -- only the watches can have told it. A watch that is refused is said once, naming the
object and the fix. (tests/k8s/test_k8s_self_signed.py proves the watches pass the real authorizer with the
component's RBAC.)
"""
from __future__ import annotations

import asyncio
import base64
import logging
from pathlib import Path

import pytest
import yaml
from aiohttp import web
from support.http import serving
from support.pool import NS, REPO
from support.waits import until

from homecluster.certs import plan as certplan
from homecluster.kube.client import KubeClient, NotFound
from homecluster.kube.connection import Connection
from homecluster.operator import certwatch
from homecluster.operator.certificates import (SECRETS, WEBHOOK_CONFIGURATION, WEBHOOK_CONFIGURATIONS,
                                               CertificateManager, ServingFiles)

FAR = 3600.0  # resync: nothing but a watch can start a pass within a test's seconds


def manifests() -> dict:
    return yaml.safe_load((REPO / "config" / "webhook" / "manifests.yaml").read_text())


@pytest.fixture
async def running(lab, tmp_path: Path):
    await lab.create(manifests())
    client = KubeClient(Connection(server=lab.url))
    manager = CertificateManager(
        client, NS, resync=FAR,
        webhook=ServingFiles(tmp_path / "w" / "tls.crt", tmp_path / "w" / "tls.key", tmp_path / "w" / "ca.crt"),
        provider=ServingFiles(tmp_path / "p" / "tls.crt", tmp_path / "p" / "tls.key", tmp_path / "p" / "ca.crt"))
    await manager.reconcile()
    manager.start()
    yield manager
    await manager.stop()
    await client.close()


async def settled(manager: CertificateManager) -> None:
    """Until no pass ran for a second and none is pending: the passes that the watches' first events (the
    objects as they are when each stream opens) started are over, so what comes next is the test's doing."""
    async def quiet() -> bool:
        before = manager.passes
        await asyncio.sleep(1.0)
        return manager.passes == before and not manager._poked.is_set()
    await until(quiet, "the passes to stop", 15)


async def exists(manager: CertificateManager, name: str) -> dict | None:
    try:
        return await manager.client.get(SECRETS, name, NS)
    except NotFound:
        return None


async def bundles(manager: CertificateManager) -> set[bytes]:
    vwc = await manager.client.get(WEBHOOK_CONFIGURATIONS, WEBHOOK_CONFIGURATION)
    return {base64.b64decode(w["clientConfig"].get("caBundle", "")) for w in vwc["webhooks"]}


async def test_a_deleted_secret_is_made_again_at_once(running: CertificateManager):
    await settled(running)
    passes = running.passes
    await running.client.delete(SECRETS, certplan.CLIENT_SECRET, NS)
    remade = await until(lambda: exists(running, certplan.CLIENT_SECRET), "the client Secret made again", 15)
    assert remade["type"] == "kubernetes.io/tls"
    assert running.passes > passes
    ca = (await running.client.get(SECRETS, certplan.CA_SECRET, NS))["data"]["tls.crt"]
    assert remade["data"]["ca.crt"] == ca  # signed by the CA that is still there, not a new one


async def test_a_re_applied_webhook_configuration_gets_its_ca_bundle_back_at_once(running: CertificateManager):
    ca = base64.b64decode((await running.client.get(SECRETS, certplan.CA_SECRET, NS))["data"]["tls.crt"])
    assert await bundles(running) == {ca}
    await settled(running)
    # as a GitOps tool that replaces the object does: deleted, then created from Git, without a caBundle
    await running.client.delete(WEBHOOK_CONFIGURATIONS, WEBHOOK_CONFIGURATION)
    await running.client.create(WEBHOOK_CONFIGURATIONS, manifests())
    assert await bundles(running) == {b""}
    await until(lambda: _bundles_are(running, {ca}), "the caBundle set again", 15)


async def _bundles_are(manager: CertificateManager, want: set[bytes]) -> bool:
    return await bundles(manager) == want


async def test_our_own_writes_end_in_a_quiet_state(running: CertificateManager):
    """A pass's writes are heard as changes; the pass after them writes nothing, so nothing more is heard."""
    await running.client.delete(SECRETS, certplan.WEBHOOK_SECRET, NS)
    await until(lambda: exists(running, certplan.WEBHOOK_SECRET), "the webhook Secret made again", 15)
    await settled(running)
    passes = running.passes
    versions = {name: (await running.client.get(SECRETS, name, NS))["metadata"]["resourceVersion"]
                for name in (certplan.CA_SECRET, certplan.WEBHOOK_SECRET)}
    await asyncio.sleep(3 * (certwatch.RECONNECT_SECONDS + 0.5))  # a window to watch: passes feeding passes would
    assert running.passes == passes  # show here, each a second apart at most (a poke's settle, a reconnect)
    for name, version in versions.items():
        assert (await running.client.get(SECRETS, name, NS))["metadata"]["resourceVersion"] == version


def test_an_event_is_a_change_when_deleted_or_of_another_version():
    changes = certwatch.Changes()
    assert changes.changed({"metadata": {"resourceVersion": "7"}}, deleted=False)  # first sight: one pass
    assert not changes.changed({"metadata": {"resourceVersion": "7"}}, deleted=False)  # a stream opened again
    assert changes.changed({"metadata": {"resourceVersion": "8"}}, deleted=False)
    assert changes.changed({"metadata": {"resourceVersion": "8"}}, deleted=True)
    assert changes.changed({"metadata": {"resourceVersion": "8"}}, deleted=False)  # made again


async def test_a_refused_watch_is_said_once_naming_the_object_and_the_fix(caplog, monkeypatch):
    asked: list[str] = []

    async def refuse(request: web.Request) -> web.Response:
        asked.append(request.query_string)
        return web.json_response({"kind": "Status", "code": 403, "reason": "Forbidden"}, status=403)
    monkeypatch.setattr(certwatch, "WATCH_RETRY_SECONDS", 0.05)
    caplog.set_level(logging.WARNING, logger="homecluster.certificates")
    async with serving({f"/api/v1/namespaces/{NS}/secrets": refuse}) as url:
        client = KubeClient(Connection(server=url))
        task = asyncio.create_task(certwatch.watch_one(client, SECRETS, certplan.CA_SECRET, NS, lambda: None))
        try:
            await until(lambda: len(asked) >= 3, "three tries", 10)
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await client.close()
    assert all(f"fieldSelector=metadata.name%3D{certplan.CA_SECRET}" in q for q in asked), asked
    said = [r.getMessage() for r in caplog.records if "cannot watch" in r.getMessage()]
    assert len(said) == 1, said
    assert f"Secret {NS}/{certplan.CA_SECRET}" in said[0] and "list and watch on it by name" in said[0], said
