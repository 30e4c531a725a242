"""The generated CRDs: committed == generated, valid apiextensions.k8s.io/v1 objects, structural schemas."""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from homecluster.api import generate
from homecluster_lab.crdcheck import celeval
from homecluster.api.crd import all_crds
from homecluster_lab.crdcheck.openapi import crd_schema, validate
from homecluster.durations import DURATION_PATTERN

ROOT = Path(__file__).resolve().parents[2]
CRD_DIR = ROOT / "config" / "crd"
CRDS = all_crds()
KINDS = sorted(CRDS)
# Names and short names of built-in resources (kubectl api-resources on a 1.32 cluster): ours must not shadow them.
CORE_NAMES = {
    "bindings", "componentstatuses", "cs", "configmaps", "cm", "endpoints", "ep", "events", "ev", "limitranges",
    "limits", "namespaces", "ns", "nodes", "no", "persistentvolumeclaims", "pvc", "persistentvolumes", "pv",
    "pods", "po", "podtemplates", "replicationcontrollers", "rc", "resourcequotas", "quota", "secrets",
    "serviceaccounts", "sa", "services", "svc", "daemonsets", "ds", "deployments", "deploy", "replicasets", "rs",
    "statefulsets", "sts", "cronjobs", "cj", "jobs", "horizontalpodautoscalers", "hpa", "ingresses", "ing",
    "networkpolicies", "netpol", "poddisruptionbudgets", "pdb", "storageclasses", "sc", "csidrivers",
    "csinodes", "volumeattachments", "priorityclasses", "pc", "leases", "runtimeclasses", "certificatesigningrequests",
    "csr", "customresourcedefinitions", "crd", "crds", "apiservices", "endpointslices", "ingressclasses",
    "clusterroles", "roles", "clusterrolebindings", "rolebindings", "flowschemas", "prioritylevelconfigurations",
    "validatingwebhookconfigurations", "mutatingwebhookconfigurations", "resourceclaims", "deviceclasses",
}
YAML11_BOOLS = {"y", "yes", "n", "no", "on", "off", "true", "false"}


def _nodes(schema: dict, path: str = ""):
    """Every schema node with its path (properties, items, additionalProperties)."""
    yield path, schema
    for key, sub in (schema.get("properties") or {}).items():
        yield from _nodes(sub, f"{path}.{key}")
    if isinstance(schema.get("items"), dict):
        yield from _nodes(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from _nodes(schema["additionalProperties"], f"{path}{{}}")


def _all_nodes():
    for kind in KINDS:
        for path, node in _nodes(crd_schema(CRDS[kind])):
            yield kind, path, node


# ---------------------------------------------------------------- committed == generated

def test_committed_crds_are_what_the_models_generate():
    changes = generate.diff(CRD_DIR, generate.render())
    assert changes == "", f"config/crd is stale, run `homecluster crds`:\n{changes}"


def test_render_writes_one_file_per_kind_and_a_kustomization():
    files = generate.render()
    assert sorted(files) == ["infra.homecluster.dev_groups.yaml", "infra.homecluster.dev_nodeclaims.yaml",
                             "infra.homecluster.dev_nodes.yaml", "kustomization.yaml"]
    assert yaml.safe_load(files["kustomization.yaml"])["resources"] == sorted(set(files) - {"kustomization.yaml"})


def _args(directory: Path, check: bool) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    generate.add_arguments(parser)
    return parser.parse_args(["--output-dir", str(directory)] + (["--check"] if check else []))


def test_write_then_check_then_detect_a_hand_edit(tmp_path, capsys):
    assert generate.run(_args(tmp_path, check=True)) == 1  # nothing there yet
    assert generate.run(_args(tmp_path, check=False)) == 0
    assert generate.run(_args(tmp_path, check=True)) == 0
    nodes = tmp_path / "infra.homecluster.dev_nodes.yaml"
    nodes.write_text(nodes.read_text().replace("- slot\n", "- machine\n"))
    capsys.readouterr()
    assert generate.run(_args(tmp_path, check=True)) == 1
    out = capsys.readouterr().out
    assert "-      - machine" in out and "+      - slot" in out


def test_cli_check_runs_as_a_real_subprocess(tmp_path):
    cli = [sys.executable, "-m", "homecluster", "crds"]
    ok = subprocess.run(cli + ["--check"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    stale = subprocess.run(cli + ["--check", "--output-dir", str(tmp_path)], capture_output=True, text=True,
                           timeout=60, env={**os.environ})
    assert stale.returncode == 1
    assert "out of date" in stale.stderr and "+apiVersion: apiextensions.k8s.io/v1" in stale.stdout


# ---------------------------------------------------------------- valid CRD objects

@pytest.mark.parametrize("path", sorted(CRD_DIR.glob("infra.homecluster.dev_*.yaml")), ids=lambda p: p.name)
def test_crd_file_is_a_valid_customresourcedefinition(path):
    crd = yaml.safe_load(path.read_text())
    kubernetes_validate.validate(crd, "1.32.0", strict=True)


def test_kubernetes_validate_does_refuse_a_broken_crd():
    crd = yaml.safe_load((CRD_DIR / "infra.homecluster.dev_groups.yaml").read_text())
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["type"] = 5
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(crd, "1.32.0", strict=True)


@pytest.mark.parametrize("kind, short, plural", [("Node", ["slot", "slots"], "nodes"),
                                                  ("NodeClaim", ["claim", "claims"], "nodeclaims"),
                                                  ("Group", ["pool", "pools"], "groups")])
def test_names_scope_category_and_status_subresource(kind, short, plural):
    spec = CRDS[kind]["spec"]
    assert CRDS[kind]["metadata"]["name"] == f"{plural}.infra.homecluster.dev"
    assert spec["scope"] == "Cluster"
    assert spec["names"]["shortNames"] == short
    assert spec["names"]["categories"] == ["homecluster"]
    assert not set(short) & CORE_NAMES
    (version,) = spec["versions"]
    assert version["name"] == "v2alpha1" and version["served"] and version["storage"]
    assert version["subresources"] == {"status": {}}


@pytest.mark.parametrize("kind, columns", [
    ("Node", [("GROUP", ".spec.groupRef"), ("POWER", ".status.powerState"), ("PHASE", ".status.phase"),
              ("CLAIM", ".status.claim"), ("ATTEMPT", ".status.attempt"), ("AGE", ".metadata.creationTimestamp")]),
    ("NodeClaim", [("SLOT", ".spec.slotRef"), ("PHASE", ".status.phase"), ("ATTEMPT", ".status.attempt"),
                   ("REASON", ".status.reason"), ("DEADLINE", ".spec.deadlineAt"),
                   ("AGE", ".metadata.creationTimestamp")]),
    ("Group", [("MIN", ".spec.minSize"), ("MAX", ".spec.maxSize"), ("PROVISION", ".spec.maxNodeProvisionTime"),
               ("AGE", ".metadata.creationTimestamp")]),
])
def test_printer_columns(kind, columns):
    version = CRDS[kind]["spec"]["versions"][0]
    got = [(c["name"].upper(), c["jsonPath"]) for c in version["additionalPrinterColumns"]]
    assert got == columns
    schema = version["schema"]["openAPIV3Schema"]
    for column in version["additionalPrinterColumns"]:
        if column["jsonPath"].startswith(".metadata"):
            continue
        node = schema
        for part in column["jsonPath"].strip(".").split("."):
            node = node["properties"][part]  # the column points at a real field
        expected = {"date": "string", "integer": "integer", "string": "string"}[column["type"]]
        assert node["type"] == expected, column


# ---------------------------------------------------------------- structural schemas

@pytest.mark.parametrize("kind, path, node", list(_all_nodes()), ids=[f"{k}{p or '.'}" for k, p, _ in _all_nodes()])
def test_every_node_is_structural(kind, path, node):
    assert "$ref" not in node and "allOf" not in node and "oneOf" not in node and "not" not in node
    assert "nullable" not in node
    assert "x-kubernetes-preserve-unknown-fields" not in node
    if node.get("x-kubernetes-int-or-string"):
        assert "type" not in node
        assert node["anyOf"] == [{"type": "integer"}, {"type": "string"}]
    else:
        assert "anyOf" not in node
        assert node.get("type") in {"object", "array", "string", "integer", "number", "boolean"}
    if node.get("type") == "object":
        assert not ("properties" in node and "additionalProperties" in node), "both properties and a map"
        assert "properties" in node or "additionalProperties" in node or path == ".metadata"
    if node.get("type") == "array":
        assert isinstance(node.get("items"), dict)
    for key in node.get("required") or []:
        assert key in (node.get("properties") or {}) or "additionalProperties" in node
    if "default" in node:
        assert validate(node["default"], node) == [], f"default of {path} violates its own schema"


@pytest.mark.parametrize("kind", KINDS)
def test_every_cel_rule_compiles_and_has_a_message(kind):
    rules = [r for _, _, node in _all_nodes() for r in node.get("x-kubernetes-validations") or []]
    assert rules
    for rule in rules:
        celeval.compile_rule(rule["rule"])
        assert rule["message"] and "\n" not in rule["message"]


def test_conditions_are_maps_keyed_by_type():
    paths = [(k, p, n) for k, p, n in _all_nodes() if p.endswith(".conditions")]
    assert {k for k, _, _ in paths} == set(KINDS)
    for _, _, node in paths:
        assert node["x-kubernetes-list-type"] == "map"
        assert node["x-kubernetes-list-map-keys"] == ["type"]
        assert "type" in node["items"]["required"]


def test_durations_timestamps_and_quantities():
    group = crd_schema(CRDS["Group"])["properties"]["spec"]["properties"]
    durations = [group["maxNodeProvisionTime"], group["autoscaling"]["properties"]["scaleDownUnneededTime"],
                 group["autoscaling"]["properties"]["scaleDownUnreadyTime"]]
    assert all(d["type"] == "string" and d["pattern"] == DURATION_PATTERN for d in durations)
    stamps = [(k, p, n) for k, p, n in _all_nodes() if p.endswith(("At", "Until", "Time")) and "Provision" not in p
              and "Unneeded" not in p and "Unready" not in p]
    assert len(stamps) >= 12
    for _, path, node in stamps:
        assert node == {**node, "type": "string", "format": "date-time"}, path
    capacity = group["template"]["properties"]["capacity"]
    assert capacity["required"] == ["cpu", "memory", "pods"]
    assert capacity["additionalProperties"]["x-kubernetes-int-or-string"] is True
    assert "pattern" in capacity["additionalProperties"]


def test_enums_and_ranges():
    node = crd_schema(CRDS["Node"])["properties"]
    assert node["spec"]["properties"]["power"]["properties"]["method"]["enum"] == ["ipmi", "redfish", "wol"]
    assert node["status"]["properties"]["powerState"]["enum"] == ["on", "off"]
    claim = crd_schema(CRDS["NodeClaim"])["properties"]["status"]["properties"]
    assert claim["phase"]["enum"] == ["pending", "booting", "ready", "completed", "failed"]
    assert "DeadlineExceeded" in claim["reason"]["enum"] and "Released" in claim["reason"]["enum"]
    auto = crd_schema(CRDS["Group"])["properties"]["spec"]["properties"]["autoscaling"]["properties"]
    assert (auto["scaleDownUtilizationThreshold"]["minimum"], auto["scaleDownUtilizationThreshold"]["maximum"]) == (0, 1)


def test_no_yaml_boolean_words_in_fields_people_write():
    """on/off are values only in status, which the operator writes as JSON; nothing in a spec uses them."""
    for kind, path, node in _all_nodes():
        if node.get("type") != "string":
            continue  # a real boolean (verifyTLS: true) is what a boolean should be
        values = {str(v).lower() for v in node.get("enum") or []} | {str(node.get("default", "")).lower()}
        if path.startswith(".spec"):
            assert not values & YAML11_BOOLS, (kind, path)
    power = crd_schema(CRDS["Node"])["properties"]["status"]["properties"]["powerState"]
    assert "operator only" in power["description"]


def test_committed_yaml_quotes_on_and_off():
    text = (CRD_DIR / "infra.homecluster.dev_nodes.yaml").read_text()
    assert "- 'on'" in text and "- 'off'" in text and "- on\n" not in text


def test_slot_ref_is_immutable_and_min_le_max_names_both_fields():
    claim = crd_schema(CRDS["NodeClaim"])["properties"]["spec"]["properties"]["slotRef"]
    assert [r["rule"] for r in claim["x-kubernetes-validations"]] == ["self == oldSelf"]
    group = crd_schema(CRDS["Group"])["properties"]["spec"]
    (rule,) = group["x-kubernetes-validations"]
    assert "spec.minSize" in rule["message"] and "spec.maxSize" in rule["message"]
    power = crd_schema(CRDS["Node"])["properties"]["spec"]["properties"]["power"]
    messages = [r["message"] for r in power["x-kubernetes-validations"]]
    assert "spec.power.ipmi is required when spec.power.method is ipmi" in messages
    assert "spec.power.ssh is required when spec.power.method is wol" in messages
