"""Shared by the real node's tests (test_k8s_realnode_*): why they cannot run here, and one node per module.

The tests are skipped, naming the missing piece, on a machine that cannot run a real node: not root, a Debian
package missing, `make realnode` or `make images` not run. One real node runs per machine: a module's node waits
for another's to stop (RealNode.lock_wait). tests/k8s/conftest.py skips them too when `make k8s` has not run. Import the fixtures by name:
`from k8s_realnode import admin, node`."""
from __future__ import annotations

from collections.abc import Callable

import pytest
import pytest_asyncio
from k8s_install_proof import BOUND, boot_claim
from support.waits import until

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


def claim_phase(lab, name: str) -> str | None:
    """The claim's phase ("new" before it has one), None once it is gone."""
    claim = next((c for c in lab.claims() if c["metadata"]["name"] == name), None)
    return None if claim is None else ((claim.get("status") or {}).get("phase") or "new")


async def boot(lab, claim: str, slot: str, detail: Callable[[], str]) -> str:
    """Create a claim for `slot` (admitted only through the webhook) and wait until it is ready or failed."""
    await lab.api.create(boot_claim(claim, slot))
    return await until(lambda: claim_phase(lab, claim) in ("ready", "failed") and claim_phase(lab, claim),
                       f"the claim {claim} to be ready or failed", BOUND, detail=detail)


def skip_if_the_controller_image_is_stale() -> None:
    """Skip when the built controller image carries an older operator than the checkout (it would test that)."""
    stale = nodeimages.stale_controller_files()
    if stale:
        pytest.skip(f"the controller image is older than the checkout ({', '.join(stale[:5])} differ): "
                    f"rebuild it with `make images`")
