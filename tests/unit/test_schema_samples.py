"""The samples in config/samples/ are valid, and each bad manifest is refused with its field path.

Objects go through the same steps as on the API server (defaults, pruning, validation) using
homecluster_lab.crdcheck.openapi against the generated CRDs; the Secrets go through kubernetes-validate.
"""
from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import kubernetes_validate
import pytest
import yaml
from pydantic import ValidationError

from homecluster import GROUP_VERSION
from homecluster.api import Group, Node, NodeClaim
from homecluster.api.crd import all_crds
from homecluster_lab.crdcheck.openapi import apply_defaults, crd_schema, invalid_message, prune, validate

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "config" / "samples"
BAD = Path(__file__).parent / "bad-manifests"
MODELS = {"Group": Group, "Node": Node, "NodeClaim": NodeClaim}


def _docs(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def _samples() -> list[tuple[str, dict]]:
    out = []
    for path in sorted(SAMPLES.glob("*.yaml")):
        if path.name != "kustomization.yaml":
            out.extend((f"{path.name}:{d['kind']}/{d['metadata']['name']}", d) for d in _docs(path))
    return out


def _schema(kind: str) -> dict:
    return crd_schema(all_crds()[kind])


def _admit(obj: dict) -> list[str]:
    schema = _schema(obj["kind"])
    return [str(e) for e in validate(prune(apply_defaults(obj, schema), schema), schema)]


SAMPLE_DOCS = _samples()
CUSTOM = [(i, d) for i, d in SAMPLE_DOCS if d["apiVersion"] == GROUP_VERSION]


def test_samples_cover_every_kind_and_power_method():
    kinds = {d["kind"] for _, d in SAMPLE_DOCS}
    assert {"Group", "Node", "NodeClaim", "Secret"} <= kinds
    methods = {d["spec"]["power"]["method"] for _, d in CUSTOM if d["kind"] == "Node"}
    assert methods == {"ipmi", "redfish", "wol"}


def test_kustomization_lists_every_sample_file():
    kustomization = yaml.safe_load((SAMPLES / "kustomization.yaml").read_text())
    files = {p.name for p in SAMPLES.glob("*.yaml")} - {"kustomization.yaml"}
    assert sorted(kustomization["resources"]) == sorted(files)


@pytest.mark.parametrize("ident, obj", CUSTOM, ids=[i for i, _ in CUSTOM])
def test_sample_is_valid_for_its_crd(ident, obj):
    schema = _schema(obj["kind"])
    assert prune(obj, schema) == obj, f"{ident} has fields the CRD does not know (typo?)"
    assert validate(obj, schema) == []
    assert _admit(obj) == []


@pytest.mark.parametrize("ident, obj", CUSTOM, ids=[i for i, _ in CUSTOM])
def test_sample_parses_into_its_model_and_back(ident, obj):
    model = MODELS[obj["kind"]].model_validate(obj)
    dumped = model.to_api()
    schema = _schema(obj["kind"])
    # the model fills the same defaults the API server does, and drops nothing the sample says
    assert {k: v for k, v in dumped.items() if k != "status" or v} == apply_defaults(obj, schema)


def test_sample_secrets_are_valid_core_objects_with_placeholders():
    secrets = [d for _, d in SAMPLE_DOCS if d["kind"] == "Secret"]
    referenced = set()
    for _, d in CUSTOM:
        if d["kind"] == "Node":
            power = d["spec"]["power"]
            block = power["ssh"] if power["method"] == "wol" else power[power["method"]]
            ref = block["credentialsSecretRef"]
            referenced.add((ref.get("namespace"), ref["name"]))
    assert {(s["metadata"]["namespace"], s["metadata"]["name"]) for s in secrets} == referenced
    for secret in secrets:
        kubernetes_validate.validate(secret, "1.32.0", strict=True)
        assert all("PLACEHOLDER" in v for v in secret["stringData"].values())


def test_sample_claim_does_not_expire_on_apply():
    """A fixed deadline in a sample has passed by the time it is applied: the sample carries none, and says how."""
    from homecluster.model.deadlines import deadline_passed
    path = SAMPLES / "infra_v2alpha1_nodeclaim.yaml"
    claim = next(d for _, d in CUSTOM if d["kind"] == "NodeClaim")
    NodeClaim.model_validate(claim)
    assert "deadlineAt" not in claim["spec"] and "requestedAt" not in claim["spec"]
    assert not deadline_passed(claim, datetime.now(timezone.utc) + timedelta(days=3650))
    text = path.read_text()
    assert "homecluster claim worker-01" in text and "12m10s" in text  # how to stamp a budget


def _bad() -> list[tuple[str, dict, str]]:
    out = []
    for path in sorted(BAD.glob("*.yaml")):
        expect = [line[len("# expect: "):] for line in path.read_text().splitlines() if line.startswith("# expect: ")]
        assert expect, f"{path.name} has no '# expect: ' line"
        out.append((path.name, _docs(path)[0], expect[0]))
    return out


BAD_DOCS = _bad()


def test_bad_manifests_cover_the_required_cases():
    names = {n for n, _, _ in BAD_DOCS}
    assert {"group-bad-duration.yaml", "group-min-greater-than-max.yaml", "nodeclaim-unknown-phase.yaml",
            "nodeclaim-missing-slotref.yaml", "node-unknown-power-method.yaml", "node-ipmi-without-block.yaml",
            "group-negative-maxsize.yaml", "group-threshold-percent.yaml"} <= names


@pytest.mark.parametrize("name, obj, expect", BAD_DOCS, ids=[n for n, _, _ in BAD_DOCS])
def test_bad_manifest_is_refused_with_its_field_path(name, obj, expect):
    schema = _schema(obj["kind"])
    errors = validate(prune(apply_defaults(obj, schema), schema), schema)
    assert expect in [str(e) for e in errors]
    path = expect.split(":")[0]
    message = invalid_message(obj["kind"], obj["metadata"]["name"], errors)
    assert message.startswith(f'{obj["kind"]}.infra.homecluster.dev "{obj["metadata"]["name"]}" is invalid: ')
    assert f"{path}: " in message


@pytest.mark.parametrize("name, obj, expect", BAD_DOCS, ids=[n for n, _, _ in BAD_DOCS])
def test_bad_manifest_is_refused_by_the_model_too(name, obj, expect):
    with pytest.raises(ValidationError):
        MODELS[obj["kind"]].model_validate(obj)
