"""Fixtures for the lab's real node (homecluster_lab.k8s.realnode): the real control plane, one real node on it
(containerd, kubelet, kube-proxy) with the controller image `make images` built imported. One node serves the
module (`loop_scope="module"`). Every test here is skipped, naming the missing piece, on a machine that cannot
run it: not root, a Debian package missing, `make k8s` / `make realnode` / `make images` not run, or another
lab's real node running on this machine (one per machine)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
import pytest_asyncio

_K8S_TESTS = str(Path(__file__).resolve().parent.parent / "k8s")  # k8s_install_proof, the dist lab's probe
if _K8S_TESTS not in sys.path:
    sys.path.insert(0, _K8S_TESTS)

from homecluster_lab.executor.kube import Kube
from homecluster_lab.k8s import binaries, nodeimages, nodesweep, realnode
from homecluster_lab.k8s.controlplane import RealControlPlane


def why_not_here() -> str | None:
    return binaries.missing_reason() or realnode.missing_reason() or nodeimages.missing_reason("controller")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    reason = why_not_here()
    if reason is None and nodesweep.LOCK.exists():
        try:
            nodesweep.release_lock(nodesweep.take_lock())
        except Exception as exc:  # noqa: BLE001  another lab's node holds the machine's one real node
            reason = str(exc)
    if reason is None:
        return
    here = Path(__file__).parent
    for item in items:
        if Path(str(item.fspath)).parent == here:
            item.add_marker(pytest.mark.skip(reason=reason))


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def control_plane(tmp_path_factory: pytest.TempPathFactory):
    async with RealControlPlane(tmp_path_factory.mktemp("k8s")) as cp:
        yield cp


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def admin(control_plane: RealControlPlane):
    async with Kube(str(control_plane.kubeconfig_path)) as kube:
        yield kube


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def node(tmp_path_factory: pytest.TempPathFactory, control_plane: RealControlPlane, admin: Kube):
    async with realnode.RealNode(tmp_path_factory.mktemp("node"), url=control_plane.url, pki=control_plane.pki,
                                 kube=admin) as real:
        await real.import_image(nodeimages.archive("controller"))
        yield real
