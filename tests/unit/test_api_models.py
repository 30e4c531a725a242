"""The typed models: wire names, enums, timestamps, and the same refusals as the CRD."""
from __future__ import annotations

from datetime import datetime, timezone

import pytest
from pydantic import ValidationError
from support import objects

from homecluster.api import Group, Node, NodeClaim
from homecluster.api.group import MIN_LE_MAX
from homecluster.api.node import PowerMethod, PowerState, SlotPhase
from homecluster.api.nodeclaim import ClaimPhase, ClaimReason
from homecluster.model.phases import is_terminal


def test_claim_reads_camel_case_and_timestamps():
    claim = NodeClaim.model_validate(objects.claim("worker-01-7f4b9c", "worker-01", "booting",
                                                   requested_at="2026-03-04T09:38:15Z",
                                                   deadline_at="2026-03-04T09:50:25Z", attempt=2, startupJob="j-1"))
    assert claim.name == "worker-01-7f4b9c"
    assert claim.spec.slot_ref == "worker-01"
    assert claim.spec.requested_at == datetime(2026, 3, 4, 9, 38, 15, tzinfo=timezone.utc)
    assert claim.status.phase is ClaimPhase.BOOTING and not is_terminal(claim.status.phase)
    assert claim.status.attempt == 2 and claim.status.startup_job == "j-1"


def test_to_api_writes_wire_names_and_rfc3339_and_no_nulls():
    claim = NodeClaim(metadata={"name": "c"}, spec={"slot_ref": "worker-01",
                                                     "requested_at": datetime(2026, 3, 4, 9, 38, 15, tzinfo=timezone.utc)})
    claim.status.phase = ClaimPhase.FAILED
    claim.status.reason = ClaimReason.DEADLINE_EXCEEDED
    assert claim.to_api() == {
        "apiVersion": "infra.homecluster.dev/v2alpha1", "kind": "NodeClaim", "metadata": {"name": "c"},
        "spec": {"slotRef": "worker-01", "requestedAt": "2026-03-04T09:38:15Z"},
        "status": {"phase": "failed", "reason": "DeadlineExceeded"},
    }


def test_empty_phase_is_absent_not_pending():
    """The model reads an empty phase as pending; the object itself carries no phase until stamped."""
    assert NodeClaim.model_validate(objects.claim("worker-01-7f4b9c")).status.phase is None


def test_slot_defaults_and_aliases():
    node = Node.model_validate({"metadata": {"name": "worker-02"}, "spec": {
        "groupRef": "workers", "providerID": "k3s://worker-02",
        "power": {"method": "redfish", "redfish": {"endpoint": "https://10.0.0.2",
                                                    "credentialsSecretRef": {"name": "bmc"}}}},
        "status": {"powerState": "on", "phase": "ready"}})
    assert node.spec.provider_id == "k3s://worker-02"
    assert node.spec.power.method is PowerMethod.REDFISH and node.spec.power.redfish.verify_tls is True
    assert node.status.power_state is PowerState.ON and node.status.phase is SlotPhase.READY
    assert node.to_api()["spec"]["power"]["redfish"]["verifyTLS"] is True


def test_group_rules():
    spec = {"maxSize": 2, "template": {"capacity": {"cpu": "4", "memory": "16Gi", "pods": 110}}}
    group = Group.model_validate({"metadata": {"name": "g"}, "spec": spec | {"pricing": {"energyPricePerKWh": 0.3}}})
    assert group.spec.min_size == 0 and group.spec.ttl_seconds_after_finished == 600
    assert group.spec.pricing.energy_price_per_kwh == 0.3
    with pytest.raises(ValidationError, match=MIN_LE_MAX.replace(".", r"\.")):
        Group.model_validate({"metadata": {"name": "g"}, "spec": spec | {"minSize": 3}})
    with pytest.raises(ValidationError, match="ignoreDaemonSetsUtilization"):
        Group.model_validate({"metadata": {"name": "g"}, "spec": spec | {"autoscaling": {
            "ignoreDaemonSetsUtilization": "on"}}})  # the YAML 1.1 trap: a string is not a boolean


@pytest.mark.parametrize("quantity, ok", [("500m", True), ("16Gi", True), (110, True), ("1e3", True),
                                          ("16 GB", False), (-1, False), ("-1", False)])
def test_quantities(quantity, ok):
    spec = {"maxSize": 1, "template": {"capacity": {"cpu": quantity, "memory": "1Gi", "pods": 10}}}
    if ok:
        assert Group.model_validate({"spec": spec}).spec.template.capacity["cpu"] == quantity
    else:
        with pytest.raises(ValidationError, match="quantity"):
            Group.model_validate({"spec": spec})


def test_unknown_fields_are_ignored_when_reading():
    claim = NodeClaim.model_validate(objects.claim("worker-01-7f4b9c", spec={"futureField": 1}, progress="x"))
    assert "futureField" not in claim.to_api()["spec"]
