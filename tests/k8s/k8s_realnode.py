"""Shared by the real node's tests (test_k8s_realnode_*): why they cannot run here, and one node per module.

The tests are skipped, naming the missing piece, on a machine that cannot run a real node: not root, a Debian
package missing, `make realnode` or `make images` not run. One real node runs per machine: a module's node waits
for another's to stop (RealNode.lock_wait). tests/k8s/conftest.py skips them too when `make k8s` has not run. Import the fixtures by name:
`from k8s_realnode import admin, node`."""
from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest
import pytest_asyncio
from k8s_install_proof import BOUND, boot_claim
from k8s_objects import established  # noqa: F401 (the real-node tests' name for it)
from support.waits import until

from homecluster import names
from homecluster_lab.executor.kube import Kube
from homecluster_lab.k8s import nodeimages, realnode
from homecluster_lab.k8s.controlplane import RealControlPlane
from homecluster_lab.node.kube import KubeError


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


async def _nothing() -> None:
    return None


async def boot(lab, claim: str, slot: str, detail: Callable[[], str],
               look: Callable[[], Awaitable[None]] = _nothing) -> str:
    """Create a claim for `slot` (admitted only through the webhook) and wait until it is ready or failed; `look`
    runs at every check (k8s_realnode_jobs.JobPods.look: the Job pods, which the operator removes once done)."""
    await lab.api.create(boot_claim(claim, slot))

    async def settled() -> str | None:
        await look()
        phase = claim_phase(lab, claim)
        return phase if phase in ("ready", "failed") else None

    return await until(settled, f"the claim {claim} to be ready or failed", BOUND, detail=detail)


async def release(lab, claim: str, slot: str, detail: Callable[[], str],
                  look: Callable[[], Awaitable[None]] = _nothing) -> None:
    """Delete the claim and wait until it is gone (its finalizer: the shutdown Job) and the slot's machine off."""
    await lab.api.kube.delete(f"/apis/{names.API_GROUP}/v2alpha1/nodeclaims/{claim}")

    async def gone_and_off() -> bool:
        await look()
        return claim_phase(lab, claim) is None and lab.machine(slot).power_state() == "off"

    await until(gone_and_off, f"the claim {claim} to be gone and {slot} off", BOUND, detail=detail)


def refusal(slot: str, live: str) -> str:
    """The webhook's exact refusal of a second claim for `slot`, whose live claim `live` is ready."""
    return (f'admission webhook "nodeclaim-v2alpha1.kb.io" denied the request: '
            f'spec.slotRef: Forbidden: slot "{slot}" already has the live NodeClaim "{live}" in phase "ready": '
            'one live claim per slot')


async def second_claim_refusal(lab, claim: str, slot: str) -> str:
    """The API server's answer to creating `claim` for `slot` ("HTTP <code>: <message>"); a failure if admitted."""
    try:
        await lab.api.kube.create(f"/apis/{names.API_GROUP}/v2alpha1/nodeclaims", boot_claim(claim, slot))
    except KubeError as exc:  # the webhook's 403, or (while a new pod's endpoint is not routed yet) a 500
        return f"HTTP {exc.status}: {exc.body.get('message') if isinstance(exc.body, dict) else exc.body}"
    raise AssertionError(f"a second claim for {slot}, which has a live one, was admitted")


def skip_if_the_controller_image_is_stale() -> None:
    """Skip when the built controller image carries an older operator than the checkout (it would test that)."""
    stale = nodeimages.stale_controller_files()
    if stale:
        pytest.skip(f"the controller image is older than the checkout ({', '.join(stale[:5])} differ): "
                    f"rebuild it with `make images`")
