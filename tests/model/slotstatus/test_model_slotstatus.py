"""The slot status a reconciler writes, computed from its inputs, and the patch of only what changed."""
import pytest
from support import objects

from homecluster.model.decide import Action
from homecluster.model.slotstatus import desired_slot_status, observe_slot, slot_status_patch, status_changes

GROUP = {"metadata": {"name": "workers"}, "spec": {"maxSize": 3, "nodeReadinessTaints": [{"key": "cni-not-ready"}]}}


def slot(status=None):
    return {"metadata": {"name": "worker-01"}, "spec": {"groupRef": "workers"}, "status": status or {}}


def claim(name, phase=None, attempt=None, created="2026-03-04T09:00:00Z", slot_ref="worker-01", deleting=False,
          finished=None):
    deletion = {"deletionTimestamp": "2026-03-04T09:10:00Z"} if deleting else {}
    return objects.claim(name, slot_ref, phase, metadata={"creationTimestamp": created, **deletion},
                         **{k: v for k, v in (("attempt", attempt), ("finishedAt", finished)) if v is not None})


def node(ready="True", taints=(), unschedulable=False):
    return {"metadata": {"name": "worker-01"}, "spec": {"taints": list(taints), "unschedulable": unschedulable},
            "status": {"conditions": [{"type": "Ready", "status": ready}]}}


FREE = {"powerState": "off", "phase": "off", "claim": None, "attempt": None, "nodeName": None}


def test_free_slot():
    assert desired_slot_status(slot(), [], None, GROUP) == FREE
    assert observe_slot(slot(), [], None, GROUP).decision.action == Action.NOTHING


def test_ready_claim_on_usable_machine():
    got = desired_slot_status(slot(), [claim("worker-01-a", "ready", 2)], node(), GROUP)
    assert got == {"powerState": "on", "phase": "ready", "claim": "worker-01-a", "attempt": 2, "nodeName": "worker-01"}


def test_ready_claim_behind_a_readiness_taint_reports_booting_and_gate_owns_it():
    seen = observe_slot(slot(), [claim("worker-01-a", "ready", 1)], node(taints=[{"key": "cni-not-ready",
                                                                                  "effect": "NoSchedule"}]), GROUP)
    assert seen.status["phase"] == "booting" and seen.decision.action == Action.GATE
    assert "cni-not-ready" in seen.observation.usability.why


def test_unstamped_claim_is_pending_capacity():
    got = desired_slot_status(slot(), [claim("worker-01-new")], None, GROUP)
    assert got["phase"] == "pending" and got["claim"] == "worker-01-new" and got["attempt"] is None


def test_claims_of_other_slots_are_ignored():
    assert desired_slot_status(slot(), [claim("w2", "ready", 1, slot_ref="worker-02")], None, GROUP) == FREE


def test_terminal_claim_on_a_machine_still_on_drains():
    seen = observe_slot(slot(), [claim("worker-01-a", "failed", 3, finished="2026-03-04T09:20:00Z")], node(), GROUP)
    assert seen.status["phase"] == "draining" and seen.status["claim"] is None
    assert seen.decision.action == Action.SHUTDOWN and seen.decision.row == 11


def test_deleted_live_claim_with_machine_on_is_reversed():
    seen = observe_slot(slot(), [claim("worker-01-a", "ready", 1, deleting=True)], node(), GROUP)
    assert seen.status["phase"] == "draining" and seen.decision.action == Action.REVERSE


def test_two_live_claims_the_newest_is_reported():
    claims = [claim("old", "booting", 1, created="2026-03-04T09:00:00Z"),
              claim("new", "pending", 1, created="2026-03-04T09:00:01Z")]
    seen = observe_slot(slot(), claims, None, GROUP)
    assert seen.status["claim"] == "new"
    assert [c["metadata"]["name"] for c in seen.view.superseded] == ["old"]


def test_missing_group_means_no_readiness_taints():
    n = node(taints=[{"key": "cni-not-ready", "effect": "NoSchedule"}])
    assert desired_slot_status(slot(), [claim("a", "ready", 1)], n, None)["phase"] == "ready"


def test_no_patch_when_nothing_changed():
    current = {"powerState": "on", "phase": "ready", "claim": "worker-01-a", "attempt": 2, "nodeName": "worker-01",
               "lastClaim": {"name": "older"}}
    assert slot_status_patch(slot(current), [claim("worker-01-a", "ready", 2)], node(), GROUP) is None


def test_patch_carries_only_changed_fields_and_nulls_removed_ones():
    current = {"powerState": "on", "phase": "ready", "claim": "worker-01-a", "attempt": 2, "nodeName": "worker-01",
               "lastClaim": {"name": "older"}}
    # the claim ended and the machine went down: claim/attempt/nodeName disappear, phase and power change
    patch = slot_status_patch(slot(current), [claim("worker-01-a", "completed", 2, finished="2026-03-04T09:30:00Z")],
                              None, GROUP)
    assert patch == {"status": {"powerState": "off", "phase": "off", "claim": None, "attempt": None, "nodeName": None}}


def test_first_write_on_an_empty_status_skips_absent_fields():
    assert status_changes(None, FREE) == {"powerState": "off", "phase": "off"}
    assert status_changes({"powerState": "off", "phase": "off"}, FREE) is None


@pytest.mark.parametrize("field, stale", [("phase", "booting"), ("powerState", "on"), ("claim", "ghost")])
def test_a_contradicting_value_is_overwritten_from_the_inputs(field, stale):
    current = dict(FREE, **{field: stale})
    patch = status_changes(current, FREE)
    assert patch == {field: FREE[field]}


def test_the_groups_readiness_taint_holds_the_reported_phase_at_booting():
    """The slot's status reads the Group: its readiness taint on the Node keeps a ready claim's slot booting, and
    the patch says so."""
    tainted = node(taints=[{"key": "cni-not-ready", "effect": "NoSchedule"}])
    ready = [claim("worker-01-a", "ready", 1)]
    assert desired_slot_status(slot(), ready, tainted, GROUP)["phase"] == "booting"
    current = {"powerState": "on", "phase": "ready", "claim": "worker-01-a", "attempt": 1, "nodeName": "worker-01"}
    assert slot_status_patch(slot(current), ready, tainted, GROUP) == {"status": {"phase": "booting"}}


def test_a_silent_node_is_reported_off_and_unusable():
    """model.liveness's verdict (`silent`) reaches the slot's status: a Node still reading Ready is reported off."""
    why = 'the kubelet of "worker-01" stopped renewing its Lease'
    seen = observe_slot(slot(), [claim("worker-01-a", "ready", 1)], node(), GROUP, silent=why)
    assert seen.status["powerState"] == "off" and seen.observation.usability.why == why
    assert observe_slot(slot(), [claim("worker-01-a", "ready", 1)], node(), GROUP).status["powerState"] == "on"
