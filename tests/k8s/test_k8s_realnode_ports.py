"""The real node's kubelet and kube-proxy must be told their ports before they bind them: when another process
takes one between the pick and the bind, the node starts them again on new ports (issue 28: a load run's real
node failed with the kubelet's `bind: address already in use`)."""
from __future__ import annotations

import socket
from pathlib import Path

import pytest
from k8s_realnode import admin, skip_unless_here  # noqa: F401  (admin: the fixture)

from homecluster_lab.config import free_port
from homecluster_lab.k8s import realnode

pytestmark = [pytest.mark.asyncio(loop_scope="module"), skip_unless_here()]


async def test_a_port_taken_between_the_pick_and_the_bind_is_picked_again(tmp_path: Path, real_k8s, admin,
                                                                          monkeypatch):
    squatter = socket.socket()  # another process's listener on the port the kubelet is about to be told
    squatter.bind(("127.0.0.1", 0))
    squatter.listen()
    taken = squatter.getsockname()[1]
    picks = iter([taken])  # the first pick, the kubelet's own port, is that one; the rest as the node picks
    monkeypatch.setattr(realnode, "free_port", lambda host: next(picks, None) or free_port(host))
    try:
        async with realnode.RealNode(tmp_path / "node", url=real_k8s.url, pki=real_k8s.pki, kube=admin) as node:
            assert node.ports.kubelet != taken
            first = node.paths.logs / "kubelet.try1.log"
            assert "address already in use" in first.read_text(), first.read_text()[-2000:]
            assert (await admin.get(f"/api/v1/nodes/{node.name}"))["metadata"]["name"] == node.name
    finally:
        squatter.close()
