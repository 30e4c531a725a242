"""Node.spec (the slot) has no field that asks for power: a machine is wanted only when a live NodeClaim names it.

v1alpha1's Node.spec.powerState was the request, the lock and the history at once, and Git re-applying
it powered machines off under running pods. Read from the CRD the API server serves (config/crd), not
from the pydantic models alone, so a field added by hand to the CRD is caught too.
"""
from __future__ import annotations

import re
from pathlib import Path

import yaml

from homecluster.model.phases import PowerState

CRD = Path(__file__).resolve().parents[2] / "config" / "crd" / "infra.homecluster.dev_nodes.yaml"

# every field of Node.spec; each one configures the machine (how to reach it, how to power it on and off)
CONFIGURATION = {
    "groupRef", "nodeName", "providerID", "powerDrawWatts", "power", "power.method",
    "power.ipmi", "power.ipmi.address", "power.ipmi.port", "power.ipmi.credentialsSecretRef",
    "power.ipmi.credentialsSecretRef.name", "power.ipmi.credentialsSecretRef.namespace",
    "power.redfish", "power.redfish.endpoint", "power.redfish.systemId", "power.redfish.verifyTLS",
    "power.redfish.insecure",
    "power.redfish.credentialsSecretRef", "power.redfish.credentialsSecretRef.name",
    "power.redfish.credentialsSecretRef.namespace",
    "power.wol", "power.wol.macAddress", "power.wol.broadcastAddress", "power.wol.port",
    "power.ssh", "power.ssh.host", "power.ssh.port", "power.ssh.user", "power.ssh.command",
    "power.ssh.credentialsSecretRef", "power.ssh.credentialsSecretRef.name",
    "power.ssh.credentialsSecretRef.namespace", "power.ssh.knownHostsConfigMapRef",
    "power.ssh.knownHostsConfigMapRef.name",
    "bootCheck", "bootCheck.host", "bootCheck.port", "bootCheck.timeout",
}
INTENT = re.compile(r"state|desired|want|intent|request|replica|running|enabled|online|^on$|^off$|powered", re.I)
POWER_WORDS = {p.value for p in PowerState} | {"poweredOn", "poweredOff", "powered_on", "powered_off", "up", "down"}


def spec_schema() -> dict:
    crd = yaml.safe_load(CRD.read_text())
    [version] = [v for v in crd["spec"]["versions"] if v["name"] == "v2alpha1"]
    return version["schema"]["openAPIV3Schema"]["properties"]["spec"]


def fields(schema: dict, prefix: str = ""):
    """(path, schema) of every property under `schema`, depth first."""
    for name, sub in (schema.get("properties") or {}).items():
        path = f"{prefix}{name}"
        yield path, sub
        yield from fields(sub, f"{path}.")
        if isinstance(sub.get("items"), dict):
            yield from fields(sub["items"], f"{path}[].")


def test_no_spec_field_is_named_as_a_request_for_power():
    named = [p for p, _ in fields(spec_schema()) if INTENT.search(p.rsplit(".", 1)[-1])]
    assert named == [], f"Node.spec fields that read as a power request: {named}"


def test_no_spec_field_takes_a_power_state():
    with_power = [p for p, s in fields(spec_schema()) if POWER_WORDS & {str(v) for v in s.get("enum") or []}]
    assert with_power == [], f"Node.spec fields whose values are power states: {with_power}"
    booleans = [p for p, s in fields(spec_schema()) if s.get("type") == "boolean"]
    # a switch on a slot could be read as "on": these two are about the BMC's transport, reviewed
    assert booleans == ["power.redfish.verifyTLS", "power.redfish.insecure"], booleans


def test_every_spec_field_is_known_configuration():
    """A new Node.spec field must configure the machine, never ask for it: review it, then list it above."""
    assert {p for p, _ in fields(spec_schema())} == CONFIGURATION
