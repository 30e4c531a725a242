"""What the lab remembers to spend less CPU, and that remembering changes no answer: CRD files parsed once
(homecluster_lab.yamlfiles), CEL verdicts kept per rule and values (crdcheck.celeval), the lab controller's
scans reading the store without copying it (apiserver.store.peek_kind)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from homecluster_lab import yamlfiles
from homecluster_lab.apiserver.server import load_crds
from homecluster_lab.apiserver.store import Store
from homecluster_lab.crdcheck import celeval

REPO = Path(__file__).resolve().parents[2]
CRD_DIR = REPO / "config" / "crd"


def test_the_crds_read_once_are_the_crds_pyyaml_reads():
    expected = [d for p in sorted(CRD_DIR.glob("*.y*ml")) for d in yaml.safe_load_all(p.read_text())
                if isinstance(d, dict) and d.get("kind") == "CustomResourceDefinition"]
    assert len(expected) == 3
    assert load_crds(CRD_DIR) == expected
    assert load_crds(CRD_DIR) == expected  # the second read comes from memory, the same


def test_each_caller_gets_its_own_copy(tmp_path):
    path = tmp_path / "crd.yaml"
    path.write_text("kind: CustomResourceDefinition\nspec: {names: {plural: things}}\n---\n")
    first = yamlfiles.documents(path)
    first[0]["spec"]["names"]["plural"] = "changed"
    assert yamlfiles.documents(path) == [{"kind": "CustomResourceDefinition", "spec": {"names": {"plural": "things"}}},
                                         None]


def test_an_edited_file_is_read_again(tmp_path):
    path = tmp_path / "crd.yaml"
    path.write_text("kind: CustomResourceDefinition\nmetadata: {name: a}\n")
    assert yamlfiles.custom_resource_definitions([path])[0]["metadata"]["name"] == "a"
    stat = path.stat()
    path.write_text("kind: CustomResourceDefinition\nmetadata: {name: b}\n")  # the same size
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert yamlfiles.custom_resource_definitions([path])[0]["metadata"]["name"] == "b"
    path.write_text("kind: ConfigMap\n")
    assert yamlfiles.custom_resource_definitions([path]) == []


@pytest.mark.parametrize("rule, value, old, verdict", [
    ("self == oldSelf", "a", "a", True),
    ("self == oldSelf", "a", "b", False),
    ("type(self) == bool", True, None, True),
    ("type(self) == bool", 1, None, False),  # 1 is no true: the verdict on true must not answer for 1
    ("type(self) == int", 1.0, None, False),  # nor 1.0 for 1
    ("type(self) == int", 1, None, True),
    ("!has(self.maxSize) || self.minSize <= self.maxSize", {"minSize": 1, "maxSize": 2}, None, True),
    ("!has(self.maxSize) || self.minSize <= self.maxSize", {"maxSize": 2, "minSize": 3}, None, False),
])
def test_a_remembered_verdict_is_the_verdict(rule, value, old, verdict):
    assert celeval.evaluate(rule, value, old) is verdict
    assert celeval.evaluate(rule, value, old) is verdict
    assert celeval._evaluate(rule, value, old) is verdict


def test_values_that_print_alike_are_told_apart():
    for value, verdict in ((1, True), ("1", False), (1, True), (1.0, False), (True, False), ([1], False)):
        assert celeval.evaluate("type(self) == int", value) is verdict, value


def test_verdicts_are_kept_per_value_and_bounded(monkeypatch):
    monkeypatch.setattr(celeval, "_VERDICTS", {})
    monkeypatch.setattr(celeval, "_VERDICTS_KEPT", 3)
    calls = []
    real = celeval._evaluate
    monkeypatch.setattr(celeval, "_evaluate", lambda *a: calls.append(a) or real(*a))
    for _ in range(2):
        assert celeval.evaluate("self > 1", 2) and not celeval.evaluate("self > 1", 1)
    assert len(calls) == 2  # the second round was remembered
    for n in range(10):
        celeval.evaluate("self > 1", n)
    assert len(celeval._VERDICTS) == 3


def test_an_error_is_raised_every_time_never_remembered():
    for _ in range(2):
        with pytest.raises(celeval.CelError, match="type conversion error"):
            celeval.evaluate("duration(self) < duration('1h')", "ten minutes")


def test_the_controllers_scan_sees_the_stored_objects_without_copies():
    store = Store()
    store.put(("", "namespaces"), {"metadata": {"name": "a", "uid": "u1"}})
    store.put(("", "namespaces"), {"metadata": {"name": "b", "uid": "u2"}})
    seen = store.peek_kind(("", "namespaces"))
    assert [o["metadata"]["name"] for o in seen] == ["a", "b"]
    assert seen[0] is store.peek_kind(("", "namespaces"))[0]  # the stored object itself, not a copy
    assert store.peek_kind(("", "pods")) == []
