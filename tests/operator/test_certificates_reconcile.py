"""operator/certificates.py's pass (CertificateManager.reconcile) against the lab's in-memory API server.

The effects of self-signed mode without the real kube-apiserver (tests/k8s/test_k8s_self_signed.py has that):
real Secrets and a real ValidatingWebhookConfiguration on the lab's HTTP API server, real files in tmp_path,
the fake clock of conftest.py for renewals. Nothing is mocked.
"""
from __future__ import annotations

import base64
import logging
import stat
from datetime import timedelta
from pathlib import Path

import pytest
import yaml

from support.pool import NS, REPO, Clock
from homecluster.certs import plan as certplan
from homecluster.kube.client import KubeClient
from homecluster.kube.connection import Connection
from homecluster.operator.certificates import (SECRETS, WEBHOOK_CONFIGURATION, WEBHOOK_CONFIGURATIONS,
                                               CertificateManager, SecretTypeError, ServingFiles)

LIFE = certplan.Lifetimes(ca=timedelta(days=30), leaf=timedelta(days=3))
NAMES = (certplan.CA_SECRET, certplan.WEBHOOK_SECRET, certplan.PROVIDER_SECRET, certplan.CLIENT_SECRET)


def pem(secret: dict, key: str) -> bytes:
    return base64.b64decode(secret["data"][key])


@pytest.fixture
async def manager(lab, tmp_path: Path):
    webhooks = yaml.safe_load((REPO / "config" / "webhook" / "manifests.yaml").read_text())
    await lab.create(webhooks)
    client = KubeClient(Connection(server=lab.url))
    clock = Clock()
    webhook = ServingFiles(tmp_path / "webhook" / "tls.crt", tmp_path / "webhook" / "tls.key",
                           tmp_path / "webhook" / "ca.crt")
    provider = ServingFiles(tmp_path / "provider" / "tls.crt", tmp_path / "provider" / "tls.key",
                            tmp_path / "provider" / "client-ca.crt")
    yield CertificateManager(client, NS, webhook=webhook, provider=provider, lifetimes=LIFE, clock=clock)
    await client.close()


async def secrets(m: CertificateManager) -> dict[str, dict]:
    return {name: await m.client.get(SECRETS, name, NS) for name in NAMES}


async def bundles(m: CertificateManager) -> dict[str, bytes]:
    vwc = await m.client.get(WEBHOOK_CONFIGURATIONS, WEBHOOK_CONFIGURATION)
    return {w["name"]: base64.b64decode(w["clientConfig"].get("caBundle", "")) for w in vwc["webhooks"]}


def key_fragments(held: dict[str, dict]) -> set[str]:
    out = set()
    for secret in held.values():
        value = secret["data"]["tls.key"]
        out.add(value[:40])
        out.update(line for line in base64.b64decode(value).decode().splitlines() if not line.startswith("-----"))
    return out


async def test_a_first_pass_makes_the_secrets_files_and_ca_bundle_and_a_second_changes_nothing(manager, caplog):
    caplog.set_level(logging.DEBUG)
    done = await manager.reconcile()
    assert done.new_ca == certplan.Make(certplan.CA_SECRET, "missing")
    made = await secrets(manager)
    assert {s["type"] for s in made.values()} == {"kubernetes.io/tls"}
    ca = pem(made[certplan.CA_SECRET], "tls.crt")
    assert {pem(made[n], "ca.crt") for n in NAMES[1:]} == {ca}
    assert set((await bundles(manager)).values()) == {ca}
    for files, secret in ((manager.webhook, certplan.WEBHOOK_SECRET), (manager.provider, certplan.PROVIDER_SECRET)):
        assert files.cert.read_bytes() == pem(made[secret], "tls.crt")
        assert files.key.read_bytes() == pem(made[secret], "tls.key")
        assert files.ca.read_bytes() == ca
        assert stat.S_IMODE(files.key.stat().st_mode) == 0o600
    assert manager.next_check == manager.clock() + (LIFE.leaf + timedelta(minutes=5)) * 2 / 3 - timedelta(minutes=5)

    again = await manager.reconcile()
    assert again.empty
    assert {n: s["metadata"]["resourceVersion"] for n, s in (await secrets(manager)).items()} == \
        {n: s["metadata"]["resourceVersion"] for n, s in made.items()}

    # "Key material never reaches a log line" (the module's docstring), at every level
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "made Secret homecluster-ca (missing)" in text
    assert "PRIVATE KEY" not in text
    fragments = key_fragments(made)
    assert len(fragments) >= 8
    leaked = sum(1 for f in fragments if f in text)
    if leaked:  # not an `assert` on the list: pytest would print the key fragments
        raise AssertionError(f"key material in a log record: {leaked} fragment(s)")


async def test_a_due_leaf_is_renewed_with_the_same_ca_and_the_files_follow(manager):
    await manager.reconcile()
    first = await secrets(manager)
    manager.clock.advance(days=2, hours=1)  # past 2/3 of 3 days
    done = await manager.reconcile()
    assert done.new_ca is None
    assert sorted(m.secret for m in done.issue) == sorted(NAMES[1:])
    now = await secrets(manager)
    assert pem(now[certplan.CA_SECRET], "tls.crt") == pem(first[certplan.CA_SECRET], "tls.crt")
    assert pem(now[certplan.PROVIDER_SECRET], "tls.key") != pem(first[certplan.PROVIDER_SECRET], "tls.key")
    assert manager.provider.cert.read_bytes() == pem(now[certplan.PROVIDER_SECRET], "tls.crt")
    assert manager.provider.key.read_bytes() == pem(now[certplan.PROVIDER_SECRET], "tls.key")


async def test_a_due_ca_reissues_every_leaf_and_the_ca_bundle(manager):
    await manager.reconcile()
    old_ca = pem((await secrets(manager))[certplan.CA_SECRET], "tls.crt")
    manager.clock.advance(days=21)  # past 2/3 of 30 days
    done = await manager.reconcile()
    assert done.new_ca is not None and done.new_ca.reason.startswith("renewal due")
    now = await secrets(manager)
    new_ca = pem(now[certplan.CA_SECRET], "tls.crt")
    assert new_ca != old_ca
    assert {pem(now[n], "ca.crt") for n in NAMES[1:]} == {new_ca}
    assert set((await bundles(manager)).values()) == {new_ca}
    # as docs/security.md says: the provider's client CA is the new CA only (the autoscaler must restart)
    assert manager.provider.ca.read_bytes() == new_ca


async def test_a_secret_of_another_type_is_named_and_the_others_are_still_made(manager, lab):
    await lab.create({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                      "metadata": {"name": certplan.CLIENT_SECRET, "namespace": NS}, "data": {}})
    with pytest.raises(SecretTypeError, match=f"Secret {NS}/{certplan.CLIENT_SECRET} has type 'Opaque'"):
        await manager.reconcile()
    assert manager.provider.cert.exists() and manager.webhook.cert.exists()
