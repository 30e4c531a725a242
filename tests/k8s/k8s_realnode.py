"""Shared by the real node's tests (test_k8s_realnode_*): why they cannot run here, and one node per module.

The tests are skipped, naming the missing piece, on a machine that cannot run a real node: not root, a Debian
package missing, `make realnode` or `make images` not run. One real node runs per machine: a module's node waits
for another's to stop (RealNode.lock_wait). tests/k8s/conftest.py skips them too when `make k8s` has not run. Import the fixtures by name:
`from k8s_realnode import admin, node`."""
from __future__ import annotations

import pytest
import pytest_asyncio

from homecluster_lab.executor.kube import Kube
from homecluster_lab.k8s import nodeimages, realnode
from homecluster_lab.k8s.controlplane import RealControlPlane


def skip_unless_here(*images: str) -> pytest.MarkDecorator:
    """Skip, naming the missing piece, unless a real node (and the `make images` images named) can run here."""
    reason = realnode.missing_reason() or nodeimages.missing_reason(*images)
    return pytest.mark.skipif(reason is not None, reason=str(reason))


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def admin(real_k8s: RealControlPlane):
    async with Kube(str(real_k8s.kubeconfig_path)) as kube:
        yield kube


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def node(tmp_path_factory: pytest.TempPathFactory, real_k8s: RealControlPlane, admin: Kube):
    """The real node on the module's control plane, with the controller image imported."""
    async with realnode.RealNode(tmp_path_factory.mktemp("node"), url=real_k8s.url, pki=real_k8s.pki, kube=admin,
                                 images=(nodeimages.archive("controller"),)) as real:
        yield real
