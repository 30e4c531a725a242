"""The slot's host, address, user, id and command fields refuse template syntax (issue 15 item 1), both in the
committed CRD (what the API server enforces) and in the typed model (what the operator reads)."""
from __future__ import annotations

import copy
from pathlib import Path

import pydantic
import pytest
import yaml

from homecluster.api import Node
from homecluster_lab.crdcheck.openapi import crd_schema, validate

CRD = yaml.safe_load((Path(__file__).resolve().parents[2] / "config/crd/infra.homecluster.dev_nodes.yaml").read_text())
SCHEMA = crd_schema(CRD)
REF = {"name": "bmc"}


def slot(power, **spec):
    return {"apiVersion": "infra.homecluster.dev/v2alpha1", "kind": "Node", "metadata": {"name": "worker-01"},
            "spec": {"groupRef": "pool-a", "nodeName": "worker-01", "providerID": "k3s://worker-01", "power": power,
                     **spec}}


IPMI = {"method": "ipmi", "ipmi": {"address": "10.0.0.21", "credentialsSecretRef": REF}}
REDFISH = {"method": "redfish", "redfish": {"endpoint": "https://10.0.0.22/", "systemId": "System.Embedded.1",
                                            "credentialsSecretRef": REF}}
WOL = {"method": "wol", "wol": {"macAddress": "52:54:00:12:34:56", "broadcastAddress": "10.0.0.255"},
       "ssh": {"host": "fe80::1", "user": "root", "command": "systemctl poweroff", "credentialsSecretRef": REF}}

# (the object, the path of a string field that reaches a lifecycle Job)
FIELDS = [
    (IPMI, ("power", "ipmi", "address")),
    (REDFISH, ("power", "redfish", "endpoint")),
    (REDFISH, ("power", "redfish", "systemId")),
    (WOL, ("power", "wol", "broadcastAddress")),
    (WOL, ("power", "ssh", "host")),
    (WOL, ("power", "ssh", "user")),
    (WOL, ("power", "ssh", "command")),
    (IPMI, ("nodeName",)),
    (IPMI, ("providerID",)),
    (IPMI, ("bootCheck", "host")),
    (IPMI, ("bootCheck", "timeout")),
]
ATTACKS = ["{{ lookup('pipe', 'id') }}", "x{% raw %}", "{# c #}", "https://h/{{ x }}", "-oProxyCommand=id"]


# String fields that hold the name of another object: the operator looks the object up by that name (a Secret or
# ConfigMap becomes a volume of the Job's pod, the Group is read from the cache); none reaches a playbook as text
# to act on, so none needs the pattern.
REFERENCES = {"spec.groupRef"} | {f"spec.power.{m}.credentialsSecretRef.{k}" for m in ("ipmi", "redfish", "ssh")
                                  for k in ("name", "namespace")} | {"spec.power.ssh.knownHostsConfigMapRef.name"}


def string_fields(node, path=("spec",)):
    if node.get("type") == "string":
        yield ".".join(path), node
    for key, child in node.get("properties", {}).items():
        yield from string_fields(child, path + (key,))
    if "items" in node:
        yield from string_fields(node["items"], path + ("[]",))


def test_every_string_field_of_a_slot_is_constrained_or_a_reference():
    """A field added to the slot later gets a pattern (or an enum) too, or is named here as a reference: the list
    of FIELDS above is checked against the CRD rather than trusted to be complete."""
    spec = CRD["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    loose = [path for path, node in string_fields(spec)
             if "pattern" not in node and "enum" not in node and path not in REFERENCES]
    assert loose == [], f"string fields of Node.spec without a pattern: {loose}"
    tested = {"spec." + ".".join(path) for _, path in FIELDS}
    patterned = {path for path, node in string_fields(spec) if "pattern" in node}
    assert patterned - tested <= {"spec.power.wol.macAddress"}, patterned - tested  # a MAC's pattern admits no brace


def with_value(power, path, value):
    obj = slot(copy.deepcopy(power))
    cur = obj["spec"]
    for key in path[:-1]:
        cur = cur.setdefault(key, {})
    cur[path[-1]] = value
    return obj


@pytest.mark.parametrize("power", [IPMI, REDFISH, WOL], ids=["ipmi", "redfish", "wol"])
def test_ordinary_values_are_accepted(power):
    assert validate(slot(power), SCHEMA) == []
    Node.model_validate(slot(power))


@pytest.mark.parametrize("power,path", FIELDS, ids=[".".join(p) for _, p in FIELDS])
@pytest.mark.parametrize("attack", ATTACKS)
def test_template_syntax_is_refused_naming_the_field(power, path, attack):
    if attack.startswith("-") and path[-1] in ("command", "endpoint"):
        return  # a leading dash is an option only to a host, user or id; a command and a URL are not argv words
    obj = with_value(power, path, attack)
    if path[-1] == "endpoint" and not attack.startswith("https://"):
        obj = with_value(power, path, "https://h/" + attack.replace(" ", ""))
    errors = validate(obj, SCHEMA)
    where = "spec." + ".".join(path)
    assert [e for e in errors if e.path == where], (attack, errors)
    with pytest.raises(pydantic.ValidationError):
        Node.model_validate(obj)


def test_a_redfish_endpoint_over_http_needs_insecure():
    # Issue 15: Redfish over http:// sends the BMC's username and password in clear.
    plain = with_value(REDFISH, ("power", "redfish", "endpoint"), "http://10.0.0.22")
    errors = validate(plain, SCHEMA)
    assert [e for e in errors if e.path == "spec.power.redfish.endpoint" and "insecure: true" in e.detail], errors
    with pytest.raises(pydantic.ValidationError, match="insecure: true"):
        Node.model_validate(plain)
    allowed = with_value(REDFISH, ("power", "redfish", "insecure"), True)
    allowed["spec"]["power"]["redfish"]["endpoint"] = "http://10.0.0.22"
    assert validate(allowed, SCHEMA) == []
    Node.model_validate(allowed)
