"""A slot deleted while claimed, on the real control plane (issue 25, item 3; docs/controller.md, "A slot removed").

RealLabCluster: kube-apiserver & co with config/rbac and config/policy as a user applies them (so the policy
homecluster-slot-finalizer-only judges the operator's finalizer writes), the operator as its ServiceAccount, one
simulated IPMI machine. The slot carries the operator's finalizer; a claim on it becomes ready; the slot is deleted
(as Flux's prune would, Background): the delete waits while the operator releases the claim -- cordon, the
shutdown Job built from the still-present slot, power off -- then the slot is gone, the claim too, the machine
off, its Node cordoned, and nothing is left Terminating. The same with Flux pruning it from Git is
tests/k8s/test_k8s_gitops.py's fifth test.
"""
from __future__ import annotations

import datetime as dt
import time

import pytest
import pytest_asyncio
from k8s_pool import real_lab_config
from support.kube import claims_and_log, slot_gone
from support.waits import until

from homecluster_lab.k8s.labcluster import RealLabCluster
from homecluster_lab.operator_proc import unavailable_reason

pytestmark = pytest.mark.asyncio(loop_scope="module")
API = "/apis/infra.homecluster.dev/v2alpha1"
CLAIMS = "nodeclaims.infra.homecluster.dev"
SLOT, CLAIM = "worker-01", "prune-1"
SLOT_FINALIZER = "infra.homecluster.dev/slot-release"  # names.SLOT_FINALIZER, spelled out as an admin reads it
# The real control plane, the operator and ansible-runner share 2 loaded cores: bounds only, the waits end when
# the thing happens.
BOUND = 400.0


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def lab(tmp_path_factory):
    if unavailable_reason():
        pytest.skip(unavailable_reason())
    config = real_lab_config(tmp_path_factory.mktemp("slot-removal"))
    async with RealLabCluster(config) as lab:
        yield lab


def phase(lab: RealLabCluster) -> str | None:
    return ((lab.api.get(CLAIMS, CLAIM) or {}).get("status") or {}).get("phase")


async def test_a_slot_deleted_while_claimed_lets_its_machine_go_then_goes(lab) -> None:
    async def finalized() -> bool:
        slot = await lab.api.kube.get(f"{API}/nodes/{SLOT}")
        return SLOT_FINALIZER in (slot["metadata"].get("finalizers") or [])
    await until(finalized, "the slot's finalizer", 120, detail=claims_and_log(lab))
    now = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    stamp = lambda t: t.isoformat().replace("+00:00", "Z")  # noqa: E731
    await lab.api.create({"apiVersion": "infra.homecluster.dev/v2alpha1", "kind": "NodeClaim",
                          "metadata": {"name": CLAIM}, "spec": {"slotRef": SLOT, "requestedAt": stamp(now),
                                                                 "deadlineAt": stamp(now + dt.timedelta(minutes=20))}})
    await until(lambda: phase(lab) == "ready", f"{CLAIM} ready", BOUND, detail=claims_and_log(lab))
    assert lab.machine(SLOT).power_state() == "on"
    started = time.monotonic()
    await lab.api.kube.delete(f"{API}/nodes/{SLOT}")
    held = await lab.api.kube.get(f"{API}/nodes/{SLOT}")
    assert held["metadata"].get("deletionTimestamp"), held["metadata"]  # held by the finalizer, not gone
    await until(lambda: slot_gone(lab.api.kube, SLOT), f"{SLOT} gone once its machine is off", BOUND,
                detail=claims_and_log(lab))
    print(f"slot removal: the slot was gone {time.monotonic() - started:.0f} s after its delete")
    assert lab.machine(SLOT).power_state() == "off"
    assert lab.api.get(CLAIMS, CLAIM) is None
    node = await lab.api.kube.get(f"/api/v1/nodes/{SLOT}")
    assert node["spec"].get("unschedulable") is True  # cordoned, drained, then powered off
    events = (await lab.api.kube.get("/api/v1/namespaces/default/events")).get("items") or []
    said = {(e["involvedObject"]["name"], e["reason"]) for e in events}
    assert {(CLAIM, "SlotRemoved"), (CLAIM, "Released"), (SLOT, "ReleasingClaim"), (SLOT, "Removed")} <= said, said
    assert (CLAIM, "SlotNotFound") not in said
    claims = (await lab.api.kube.get(f"{API}/nodeclaims")).get("items") or []
    assert [c["metadata"]["name"] for c in claims if c["metadata"].get("deletionTimestamp")] == []
