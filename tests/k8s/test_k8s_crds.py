"""Our CRDs (config/crd, generated) on the real API server, and the same requests against the lab's
in-memory one: the beginning of the differential suite of issue 12.

Each bad object must be refused by the real server with what our CRDs promise (the CEL rules' own
messages, the schema's patterns and enums), and the in-memory server must answer the same: HTTP status,
reason, and every cause (reason, field, message). A difference fails the test unless it is listed in
KNOWN_DIFFERENCES with its reason (and in docs/lab.md).
"""
from __future__ import annotations

import asyncio
import copy
import os
import re
import time
from typing import Any

import pytest
import yaml
from k8s_objects import crds, path_of, sample
from k8s_rest import Rest, causes

from homecluster_lab.k8s import binaries

pytestmark = pytest.mark.asyncio(loop_scope="module")

def cel_message(kind: str, rule_fragment: str) -> str:
    """The message our CRD gives the CEL rule containing `rule_fragment` (what the docs promise)."""
    found = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for v in node.get("x-kubernetes-validations") or []:
                if rule_fragment in v["rule"]:
                    found.append(v["message"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)
    walk(next(c for c in crds() if c["spec"]["names"]["kind"] == kind))
    assert len(found) == 1, f"{kind}: {len(found)} CEL rules contain {rule_fragment!r}"
    return found[0]


VALID = ["infra_v2alpha1_group.yaml", "infra_v2alpha1_node_ipmi.yaml", "infra_v2alpha1_node_redfish.yaml",
         "infra_v2alpha1_node_wol.yaml", "infra_v2alpha1_nodeclaim.yaml"]


@pytest.mark.parametrize("name", VALID)
async def test_samples_are_accepted_by_both(servers: dict[str, Rest], name: str) -> None:
    obj = sample(name)
    for server, rest in servers.items():
        status, body = await rest.request("POST", path_of(obj), obj)
        assert status == 201, f"{server} refused {name}: {body}"
        assert body["metadata"]["name"] == obj["metadata"]["name"] and body["spec"], body


def _bad(name: str, mutate) -> dict[str, Any]:
    obj = copy.deepcopy(sample(name))
    obj["metadata"]["name"] = "bad-" + obj["metadata"]["name"]
    mutate(obj)
    return obj


def _min_over_max(o):
    o["spec"]["minSize"], o["spec"]["maxSize"] = 5, 3


def _duration(o):
    o["spec"]["maxNodeProvisionTime"] = "ten minutes"


def _quantity(o):
    o["spec"]["template"]["capacity"]["cpu"] = "eight"


def _no_ipmi(o):
    del o["spec"]["power"]["ipmi"]


def _no_ssh(o):
    del o["spec"]["power"]["ssh"]


def _ftp(o):
    o["spec"]["power"]["redfish"]["endpoint"] = "ftp://bmc.example"


def _mac(o):
    o["spec"]["power"]["wol"]["macAddress"] = "52:54:00:12:34"


def _method(o):
    o["spec"]["power"]["method"] = "carrier-pigeon"


def _no_slot(o):
    del o["spec"]["slotRef"]


# (case, sample, mutation, what the real server must say in one of the causes)
BAD_CREATES = [
    ("group-min-over-max", "infra_v2alpha1_group.yaml", _min_over_max, lambda: cel_message("Group", "minSize")),
    ("group-duration-pattern", "infra_v2alpha1_group.yaml", _duration, lambda: "should match"),
    ("group-quantity-pattern", "infra_v2alpha1_group.yaml", _quantity, lambda: "should match"),
    ("slot-ipmi-missing", "infra_v2alpha1_node_ipmi.yaml", _no_ipmi,
     lambda: cel_message("Node", "has(self.ipmi)")),
    ("slot-ssh-missing", "infra_v2alpha1_node_wol.yaml", _no_ssh, lambda: cel_message("Node", "has(self.ssh)")),
    ("slot-redfish-endpoint-pattern", "infra_v2alpha1_node_redfish.yaml", _ftp, lambda: "should match"),
    ("slot-mac-pattern", "infra_v2alpha1_node_wol.yaml", _mac, lambda: "should match"),
    ("slot-method-enum", "infra_v2alpha1_node_ipmi.yaml", _method, lambda: "Unsupported value"),
    ("claim-slot-required", "infra_v2alpha1_nodeclaim.yaml", _no_slot, lambda: "Required value"),
]

# case -> why the in-memory server answers differently (also in docs/lab.md); empty: they agree.
KNOWN_DIFFERENCES: dict[str, str] = {}


async def _both(servers: dict[str, Rest], method: str, path: str, body: Any) -> dict[str, tuple]:
    answers = {}
    for server, rest in servers.items():
        status, out = await rest.request(method, path, body)
        answers[server] = (status, out.get("reason"), out.get("message"), causes(out))
    return answers


def _compare(case: str, answers: dict[str, tuple], promised: str) -> None:
    real, lab = answers["real"], answers["lab"]
    assert real[0] == 422 and real[1] == "Invalid", f"{case}: the real server said {real}"
    assert any(promised in c[2] for c in real[3]), f"{case}: no cause says {promised!r}: {real[3]}"
    if case in KNOWN_DIFFERENCES:
        return
    assert lab[:2] == real[:2] and lab[3] == real[3], (
        f"{case}: the in-memory server differs from the real one\n real: {real}\n  lab: {lab}")
    assert lab[2] == real[2], f"{case}: messages differ\n real: {real[2]}\n  lab: {lab[2]}"


@pytest.mark.parametrize("case,name,mutate,promised", BAD_CREATES, ids=[c[0] for c in BAD_CREATES])
async def test_bad_objects_are_refused_as_promised_and_alike(servers, case, name, mutate, promised) -> None:
    obj = _bad(name, mutate)
    _compare(case, await _both(servers, "POST", path_of(obj), obj), promised())


async def test_slot_ref_is_immutable_on_both(servers: dict[str, Rest]) -> None:
    claim = _bad("infra_v2alpha1_nodeclaim.yaml", lambda o: None)
    claim["metadata"]["name"] = "immutable-claim"
    for server, rest in servers.items():
        status, body = await rest.request("POST", path_of(claim), claim)
        assert status == 201, f"{server}: {body}"
    patch = {"spec": {"slotRef": "worker-02"}}
    answers = {}
    for server, rest in servers.items():
        status, out = await rest.request("PATCH", f"{path_of(claim)}/immutable-claim", patch,
                                         content_type="application/merge-patch+json")
        answers[server] = (status, out.get("reason"), out.get("message"), causes(out))
    _compare("claim-slot-immutable", answers, cel_message("NodeClaim", "oldSelf"))


def _columns(kind: str) -> list[str]:
    crd = next(c for c in crds() if c["spec"]["names"]["kind"] == kind)
    return ["NAME"] + [c["name"].upper() for c in crd["spec"]["versions"][0]["additionalPrinterColumns"]]


async def _kubectl(kubeconfig, home, *args: str, input: str | None = None) -> str:
    program = binaries.find("kubectl")
    home.mkdir(exist_ok=True)
    proc = await asyncio.create_subprocess_exec(
        str(program), "--kubeconfig", str(kubeconfig), "--cache-dir", str(home / "cache"), *args,
        stdin=asyncio.subprocess.PIPE if input is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env={**os.environ, "HOME": str(home)})
    out, err = await asyncio.wait_for(proc.communicate(input.encode() if input is not None else None), 60)
    assert proc.returncode == 0, f"kubectl {' '.join(args)} failed: {err.decode()}"
    return out.decode()


async def test_kubectl_get_homecluster_shows_the_printer_columns(servers, real_k8s, lab_api, tmp_path) -> None:
    if binaries.find("kubectl") is None:
        pytest.skip(binaries.missing_reason(("kubectl",)))
    group = _bad("infra_v2alpha1_group.yaml", lambda o: None)
    slot = _bad("infra_v2alpha1_node_ipmi.yaml", lambda o: o["spec"].update(groupRef=group["metadata"]["name"]))
    for rest in servers.values():
        for obj in (group, slot):
            status, body = await rest.request("POST", path_of(obj), obj)
            assert status in (201, 409), body
    outputs = {}
    for server, kubeconfig in (("real", real_k8s.kubeconfig_path), ("lab", lab_api.kubeconfig_path)):
        home = tmp_path / server
        outputs[server] = await _kubectl(kubeconfig, home, "get", "homecluster")
    headers = [line.split() for line in outputs["real"].splitlines() if line.startswith("NAME ")]
    for kind in ("Group", "Node"):
        assert _columns(kind) in headers, f"{kind}'s printer columns are not in:\n{outputs['real']}"
    assert "bad-worker-01" in outputs["real"] and "bad-workers" in outputs["real"]
    ages = re.compile(r"\b\d+(?:s|m|h|d)(?:\d+s)?\b")
    assert ages.sub("<age>", outputs["lab"]) == ages.sub("<age>", outputs["real"]), (
        f"kubectl get homecluster differs\n--- real\n{outputs['real']}--- lab\n{outputs['lab']}")


async def test_kubectl_apply_alike(servers, real_k8s, lab_api, tmp_path) -> None:
    """kubectl apply (client-side, then server-side) of a Group: the same words, the same result."""
    if binaries.find("kubectl") is None:
        pytest.skip(binaries.missing_reason(("kubectl",)))
    group = sample("infra_v2alpha1_group.yaml")
    group["metadata"]["name"] = "applied"
    bigger = {**group, "spec": {**group["spec"], "maxSize": 5}}
    steps = [("apply", "-f", "-"), ("apply", "-f", "-"), ("apply", "-f", "-"),
             ("apply", "--server-side", "--force-conflicts", "-f", "-")]
    inputs = [group, group, bigger, {**group, "spec": {**group["spec"], "maxSize": 4}}]
    said: dict[str, list[str]] = {}
    for server, kubeconfig in (("real", real_k8s.kubeconfig_path), ("lab", lab_api.kubeconfig_path)):
        home = tmp_path / server
        said[server] = [(await _kubectl(kubeconfig, home, *args, input=yaml.safe_dump(obj))).strip()
                        for args, obj in zip(steps, inputs)]
        said[server].append(await _kubectl(kubeconfig, home, "get", "group", "applied",
                                           "-o", "jsonpath={.spec.maxSize}"))
    assert said["real"] == ["group.infra.homecluster.dev/applied created",
                            "group.infra.homecluster.dev/applied unchanged",
                            "group.infra.homecluster.dev/applied configured",
                            "group.infra.homecluster.dev/applied serverside-applied", "4"], said
    assert said["lab"] == said["real"], said
