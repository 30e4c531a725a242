"""The NodeClaim admission check: one live claim per slot, the exact refusal text and response shape."""
from __future__ import annotations

import pytest

from homecluster.webhook import check_claim_admission, forbidden_status


def claim(name, slot="worker-01", phase=None, deleting=False):
    c = {"metadata": {"name": name}, "spec": {"slotRef": slot}, "status": {}}
    if phase is not None:
        c["status"]["phase"] = phase
    if deleting:
        c["metadata"]["deletionTimestamp"] = "2026-03-04T09:40:00Z"
    return c


NEW = claim("worker-01-aaaaaa")


def test_create_refused_when_another_live_claim_names_the_slot():
    text = check_claim_admission("CREATE", NEW, [claim("worker-01-7f4b9c", phase="booting")])
    assert text == ('slot "worker-01" already has the live NodeClaim "worker-01-7f4b9c" in phase "booting": '
                    "one live claim per slot")


@pytest.mark.parametrize("phase, shown", [(None, "pending"), ("", "pending"), ("pending", "pending"),
                                          ("booting", "booting"), ("ready", "ready")])
def test_every_live_phase_refuses_and_empty_is_shown_as_pending(phase, shown):
    text = check_claim_admission("CREATE", NEW, [claim("other", phase=phase)])
    assert text == f'slot "worker-01" already has the live NodeClaim "other" in phase "{shown}": one live claim per slot'


def test_a_claim_marked_for_deletion_still_holds_its_slot():
    # Its reversal (cordon, shutdown, power off) still runs; the machine is not free yet.
    assert check_claim_admission("CREATE", NEW, [claim("other", phase="ready", deleting=True)]) is not None


@pytest.mark.parametrize("phase", ["failed", "completed"])
def test_terminal_claims_free_the_slot(phase):
    assert check_claim_admission("CREATE", NEW, [claim("old", phase=phase)]) is None


def test_admitted_cases():
    assert check_claim_admission("CREATE", NEW, []) is None
    # The claim itself (a retried create) does not count against itself.
    assert check_claim_admission("CREATE", NEW, [claim("worker-01-aaaaaa")]) is None
    # Claims of other slots do not count, even if a caller passed them.
    assert check_claim_admission("CREATE", NEW, [claim("x", slot="worker-02", phase="booting")]) is None
    # Creating a claim that is already terminal is not a want.
    assert check_claim_admission("CREATE", claim("n", phase="failed"), [claim("other", phase="booting")]) is None


@pytest.mark.parametrize("operation", ["DELETE", "UPDATE", "CONNECT"])
def test_only_create_is_checked(operation):
    assert check_claim_admission(operation, NEW, [claim("other", phase="booting")]) is None


def test_first_conflicting_live_claim_is_named():
    text = check_claim_admission("create", NEW, [claim("done", phase="completed"), claim("b", phase="ready")])
    assert '"b" in phase "ready"' in text


TEXT = 'slot "worker-01" already has the live NodeClaim "worker-01-7f4b9c" in phase "booting": one live claim per slot'


def test_our_refusal_gets_the_field_forbidden_status_with_the_exact_message():
    status = forbidden_status(f"spec.slotRef: Forbidden: {TEXT}")
    assert status["code"] == 403 and status["reason"] == "Forbidden" and status["status"] == "Failure"
    assert status["message"] == f"spec.slotRef: Forbidden: {TEXT}"
    assert status["details"]["causes"] == [{"field": "spec.slotRef", "reason": "FieldValueForbidden",
                                            "message": TEXT}]


def test_a_refusal_on_another_field_names_that_field_in_its_cause():
    status = forbidden_status("spec.providerID: Forbidden: taken", field="spec.providerID")
    assert status["message"] == "spec.providerID: Forbidden: taken"
    assert status["details"]["causes"] == [{"field": "spec.providerID", "reason": "FieldValueForbidden",
                                            "message": "taken"}]


def slot(name="worker-01", deleting=True):
    obj = {"metadata": {"name": name}, "spec": {"groupRef": "workers"}}
    if deleting:
        obj["metadata"]["deletionTimestamp"] = "2026-03-04T09:40:00Z"
    return obj


def test_a_claim_on_a_slot_being_removed_is_refused_naming_the_slot_and_the_field():
    assert check_claim_admission("CREATE", NEW, [], slot()) == (
        'slot "worker-01" is being removed (it is marked for deletion): no new claim may start on it; '
        "name another slot in spec.slotRef")


@pytest.mark.parametrize("operation, the_slot", [("CREATE", slot(deleting=False)), ("CREATE", None),
                                                 ("CREATE", slot("worker-02")), ("DELETE", slot()),
                                                 ("UPDATE", slot())])
def test_only_a_create_naming_a_slot_being_removed_is_refused_for_it(operation, the_slot):
    assert check_claim_admission(operation, NEW, [], the_slot) is None


def test_a_terminal_claim_on_a_slot_being_removed_is_not_refused():
    assert check_claim_admission("CREATE", claim("n", phase="completed"), [], slot()) is None
