"""The latency and write-count benchmarks stay runnable on both control planes.

benchmarks/realaudit.py reads kube-apiserver's audit log into what the benchmarks read from the in-memory
server; data/real-audit-one-lifecycle.jsonl holds real lines, captured from `controller_latency.py
--control-plane kubernetes --claims 3` (one slot's boot and release, plus a few lines of other kinds; the
responses' managedFields, Pod and Job specs and Node status images trimmed to keep the file small). The
`--control-plane` flag is checked through main() with the lab run replaced by a replay of those lines: a
lab run takes minutes, which the benchmarks themselves spend (docs/controller.md#latency).
"""
from __future__ import annotations

import json
from pathlib import Path

import compare
import controller_latency
import pytest
import realaudit
import writes_per_lifecycle
import yaml

LINES = (Path(__file__).parent / "data" / "real-audit-one-lifecycle.jsonl").read_text().splitlines()
SLOT = "worker-01"


def _line(pred) -> str:
    return next(line for line in LINES if pred(json.loads(line)))


def _claim_create(e: dict) -> bool:
    return e["verb"] == "create" and e["objectRef"]["resource"] == "nodeclaims"


def recording(plane: str = "kubernetes") -> controller_latency.Recording:
    writes, objects = realaudit.read(LINES)
    start = min(w.time for w in writes if w.resource == "nodeclaims")
    return controller_latency.Recording([w for w in writes if 200 <= w.code < 300], objects, [SLOT],
                                        marks={"increase": start - 0.001}, control_plane=plane)


def test_a_real_write_line_is_read_with_its_user_times_and_object() -> None:
    line = _line(_claim_create)
    write, obj = realaudit.parse_line(line)
    event = json.loads(line)
    assert (write.verb, write.resource, write.group, write.subresource, write.code) == \
        ("create", "nodeclaims", "infra.homecluster.dev", "", 201)
    assert write.user == "system:serviceaccount:homecluster-system:homecluster-controller"
    assert "homecluster-operator" in write.user_agent
    assert write.time == realaudit.timestamp(event["requestReceivedTimestamp"])
    assert write.done == realaudit.timestamp(event["stageTimestamp"]) and write.done >= write.time
    assert obj["kind"] == "NodeClaim" and write.rv == obj["metadata"]["resourceVersion"] == "298"
    assert obj["spec"]["slotRef"] == SLOT


def test_reads_other_stages_cut_lines_and_metadata_only_writes() -> None:
    line = _line(_claim_create)
    event = json.loads(line)
    assert realaudit.parse_line(json.dumps({**event, "verb": "get"})) is None
    assert realaudit.parse_line(json.dumps({**event, "stage": "ResponseStarted"})) is None
    assert realaudit.parse_line(json.dumps({**event, "objectRef": None, "requestURI": "/healthz"})) is None
    assert realaudit.parse_line(line[: len(line) // 2]) is None  # the log's last line, still being written
    assert realaudit.parse_line("") is None
    # a Lease (Metadata level: no response kept) and a binding (answered with a Status) carry no object
    for pred in (lambda e: e["objectRef"]["resource"] == "leases" and e["verb"] == "create",
                 lambda e: e["objectRef"].get("subresource") == "binding"):
        write, obj = realaudit.parse_line(_line(pred))
        assert obj is None and write.rv == ""
    # a Secret's create is logged without its body
    write, obj = realaudit.parse_line(_line(lambda e: e["objectRef"]["resource"] == "secrets"))
    assert obj is None and write.resource == "secrets"


def test_the_patch_that_drops_the_last_finalizer_keeps_an_object_of_its_own() -> None:
    """kube-apiserver answers it with the resourceVersion of the write before: both objects are kept."""
    writes, objects = realaudit.read(LINES)
    claim = [w for w in writes if w.resource == "nodeclaims" and w.verb == "patch"]
    last, before = claim[-1], claim[-2]
    assert last.rv != before.rv and last.rv.split("+")[0] == before.rv
    assert objects[before.rv]["metadata"].get("finalizers")
    assert not objects[last.rv]["metadata"].get("finalizers")


def test_a_real_lifecycle_is_attributed_as_in_memory() -> None:
    writes = controller_latency.attribute(recording())
    ops = [w.label for w in writes if w.slot == SLOT and w.writer == "operator"]
    assert ops == ["slot off",  # the operator's first pass over the new slot, before the scale-up
                   "claim seed", "slot pending", "claim finalizer add", "startup Job create", "claim booting",
                   "events create", "slot booting", "slot power on", "claim ready", "events create",
                   "claim deadline clear", "slot ready",
                   "node cordon", "shutdown Job create", "claim shutdownAttempts", "slot draining", "slot off",
                   "claim completed", "events create", "slot lastClaim", "claim finalizer release",
                   "slot status other"]
    writers = {w.writer for w in writes if w.slot == SLOT}
    assert {"provider", "operator", "job-controller", "runner kubelet", "kubelet", "cni (readiness taint)",
            "node-controller", "generic-garbage-collector"} <= writers
    assert "other" not in writers and "executor" not in writers  # the in-memory lab's names


def test_reports_print_the_real_lifecycle() -> None:
    rec = recording()
    latency = controller_latency.report(rec)
    assert "control plane: kubernetes" in latency and "goal: step p99 < 250 ms -> " in latency
    rows = controller_latency.latency_rows(rec)
    assert len(rows["step ALL operator writes"]) == 22
    assert len(rows["transition ready <- Node usable"]) == 1 and len(rows["transition seed <- claim created"]) == 1
    assert "the tail: the slowest 5 of 22 steps" in latency
    writes = writes_per_lifecycle.report(rec)
    assert "operator writes per boot: mean 12.00, max 12" in writes
    assert "operator writes per reversal: mean 10.00, max 10" in writes


def test_the_policy_keeps_credentials_out_of_the_audit_log() -> None:
    """Responses are logged only for the kinds attributed; Secrets and tokens stay at Metadata."""
    rules = yaml.safe_load(realaudit.POLICY)["rules"]
    full = [r for r in rules if r["level"] in ("Request", "RequestResponse")]
    assert full and all(r.get("resources") for r in full)
    named = {res for r in full for group in r["resources"] for res in group["resources"]}
    assert not {n for n in named if n.split("/")[0] in ("secrets", "serviceaccounts", "configmaps")} and \
        "serviceaccounts/token" not in named


def test_spread_and_ratio() -> None:
    runs = [{"a": (0.010, 0.100)}, {"a": (0.030, 0.300)}, {"a": (0.020, 0.200), "b": (1.0, 2.0)}]
    assert compare.spread(runs)["a"]["p99"] == pytest.approx((0.2, 0.1, 0.3))
    assert compare.spread(runs)["b"]["runs"][0] == 1
    table = compare.ratio_table({"memory": {"a": (0.01, 0.1)}, "kubernetes": {"a": (0.02, 0.25)}})
    assert "2.00x" in table and "2.50x" in table


@pytest.mark.parametrize("choice, planes", [("both", ["memory", "kubernetes"]), ("kubernetes", ["kubernetes"])])
def test_control_plane_flag_runs_each_plane_and_prints_both(choice, planes, monkeypatch, capsys) -> None:
    asked = []

    async def replay(claims, workdir, *, control_plane, **_):
        asked.append((control_plane, claims))
        return recording(control_plane)

    monkeypatch.setattr(controller_latency, "run_lifecycles", replay)
    assert controller_latency.main(["--claims", "1", "--runs", "2", "--control-plane", choice]) == 0
    out = capsys.readouterr().out
    assert asked == [(p, 1) for _ in range(2) for p in planes]  # the planes take turns
    for p in planes:
        assert f"control plane: {p}" in out and f"==== {p}: 2 runs, median and spread" in out
    assert ("each control plane against the in-memory server" in out) == (len(planes) == 2)

    asked.clear()
    monkeypatch.setattr(writes_per_lifecycle, "run_lifecycles", replay)
    assert writes_per_lifecycle.main(["--claims", "1", "--control-plane", choice]) == 0
    out = capsys.readouterr().out
    assert [p for p, _ in asked] == planes
    assert ("kubernetes / memory" in out) == (len(planes) == 2)


def test_an_unknown_control_plane_is_refused(capsys) -> None:
    with pytest.raises(SystemExit):
        controller_latency.main(["--control-plane", "kind"])
    assert "--control-plane" in capsys.readouterr().err


def test_the_node_lifecycle_controllers_taints_are_not_events() -> None:
    """node.kubernetes.io/not-ready, unreachable...: the operator reads none of them, so a write that changes
    only those is no cause a step's latency could be measured from."""
    writes = controller_latency.attribute(recording())
    tainting = [w for w in writes if w.writer == "node-controller" and w.what == "corev1 nodes patch"]
    assert len(tainting) >= 5
    assert not any(controller_latency.is_event(w) for w in tainting)


def test_a_missing_real_control_plane_is_refused_before_the_first_run(monkeypatch) -> None:
    from homecluster_lab.k8s import binaries

    monkeypatch.setattr(binaries, "missing_reason", lambda *a, **k: "kube-apiserver is not built: run `make k8s`")
    monkeypatch.setattr(controller_latency, "run_lifecycles", None)  # never reached
    with pytest.raises(SystemExit, match="make k8s"):
        controller_latency.main(["--control-plane", "both"])
    controller_latency.check_planes(["memory"])  # the in-memory one needs nothing built
