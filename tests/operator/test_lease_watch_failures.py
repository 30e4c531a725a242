"""kube.leasewatch when the API fails it or ends its streams at once: one warning per run of failures (then
debug), the retry waits run to their last one and stay there, and a stream that ends at once is followed by a
pause before the next list -- against the lab's real API server, or an address where nothing listens."""
from __future__ import annotations

import asyncio
import logging

import pytest
from load_factor import scaled
from support.waits import until

from homecluster.kube import client as kube
from homecluster.kube import leasewatch
from homecluster.kube.connection import Connection
from homecluster.kube.leasewatch import watch_leases

pytestmark = pytest.mark.lab


async def test_failures_in_a_row_warn_once_and_keep_retrying_past_the_last_wait(monkeypatch, caplog):
    caplog.set_level(logging.DEBUG, "homecluster.leases")
    monkeypatch.setattr(leasewatch, "RETRY_SECONDS", (0.001, 0.002, 0.003, 0.004, 0.005, 0.006))
    client = kube.KubeClient(Connection(server="http://127.0.0.1:9"), timeout=scaled(2))  # nothing listens
    lists: list[list] = []
    task = asyncio.create_task(watch_leases(client, lists.append, lambda lease, deleted: None))
    try:
        await until(lambda: len(lists) >= 9 or task.done(), "nine failed lists", 20)
        assert not task.done(), task.exception()  # the ninth failure waits the last wait again
        assert lists[:9] == [[]] * 9  # each failure forgets what was seen
        records = [r for r in caplog.records if r.name == "homecluster.leases"]
        assert [r.levelname for r in records[:9]] == ["WARNING"] + ["DEBUG"] * 8
        assert records[0].getMessage().startswith("watching Leases in kube-node-lease failed (")
        assert records[0].getMessage().endswith(
            "; liveness falls back to the Nodes' Ready until it works (the operator needs list and watch on "
            "coordination.k8s.io leases in kube-node-lease: config/rbac/node_lease_role.yaml); again in 0.0s")
        assert "127.0.0.1:9" in records[0].getMessage()  # the error itself
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await client.close()


async def test_a_stream_that_ends_at_once_is_followed_by_a_pause_before_the_next_list(lab, monkeypatch):
    pause = scaled(2.0)
    monkeypatch.setattr(leasewatch, "MIN_STREAM", pause)
    await lab.create({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",  # not a kubelet's: not listed
                      "metadata": {"name": "homecluster-operator", "namespace": "homecluster-system"},
                      "spec": {"holderIdentity": "op-a", "leaseDurationSeconds": 15}})
    client = kube.KubeClient(Connection(server=lab.url))
    loop = asyncio.get_running_loop()
    listed: list[float] = []
    seen: list[str] = []

    def on_list(items: list) -> None:
        assert [lease["metadata"]["namespace"] for lease in items] == ["kube-node-lease"] * len(items)
        listed.append(loop.time())

    task = asyncio.create_task(watch_leases(client, on_list,
                                            lambda lease, deleted: seen.append(lease["metadata"]["name"])))
    try:
        await until(lambda: listed or task.done(), "the first list", 10)
        assert not task.done(), task.exception()
        await lab.create({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                          "metadata": {"name": "worker-01", "namespace": "kube-node-lease"},
                          "spec": {"holderIdentity": "worker-01", "leaseDurationSeconds": 40}})
        await until(lambda: seen, "the stream to carry the new Lease", 10)
        ended = loop.time()
        lab.faults.drop_watches("leases")  # the stream ends well within MIN_STREAM of its start
        await until(lambda: len(listed) >= 2, "the next list", 10 + pause)
        assert listed[1] - ended >= pause * 0.99, f"listed again {listed[1] - ended:.3f}s after the stream ended"
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await client.close()
