"""Both API servers the lab drives keep the one interface LabCluster types `lab.api` with (labapi.LabApi).

LabAPIServer (in memory) and RealApi (kube-apiserver) match LabApi by shape, never by import: this holds each
method to the Protocol's parameters (same names, kinds and defaults; an extra parameter only with a default)
and each attribute to being set by the constructor, so a change to one server that the lab's callers would
trip over fails here, not in a lab that starts on the other server only.
"""
from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from homecluster_lab.apiserver import LabAPIServer
from homecluster_lab.k8s.realapi import RealApi
from homecluster_lab.labapi import LabApi

METHODS = [name for name, value in vars(LabApi).items() if inspect.isfunction(value) and not name.startswith("_")]
ATTRIBUTES = list(LabApi.__annotations__)


def servers(tmp_path: Path) -> list[object]:
    return [LabAPIServer(workdir=tmp_path), RealApi("https://127.0.0.1:6443", tmp_path / "kubeconfig", b"")]


def test_the_protocol_names_what_the_lab_calls():
    assert sorted(METHODS) == ["create", "get", "list"]
    assert sorted(ATTRIBUTES) == ["ca_pem", "kubeconfig_path", "url"]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("server", [LabAPIServer, RealApi], ids=lambda c: c.__name__)
def test_each_server_takes_the_protocols_parameters(server, method):
    wanted = inspect.signature(getattr(LabApi, method)).parameters
    found = inspect.signature(getattr(server, method)).parameters
    for name, param in wanted.items():
        assert name in found, f"{server.__name__}.{method} has no parameter {name!r} (labapi.LabApi has)"
        got = found[name]
        assert (got.kind, got.default) == (param.kind, param.default), (
            f"{server.__name__}.{method}({name}): {got.kind.name} default {got.default!r}; labapi.LabApi says "
            f"{param.kind.name} default {param.default!r}")
    for name in set(found) - set(wanted):
        assert found[name].default is not inspect.Parameter.empty, (
            f"{server.__name__}.{method}({name}) must have a default: the lab's callers never pass it")
    assert inspect.iscoroutinefunction(getattr(server, method)) == inspect.iscoroutinefunction(
        getattr(LabApi, method)), f"{server.__name__}.{method}: async in one and not in the other"


def test_each_server_sets_the_protocols_attributes(tmp_path):
    for server in servers(tmp_path):
        for name in ATTRIBUTES:
            assert hasattr(server, name), f"{type(server).__name__} sets no {name!r} (labapi.LabApi has it)"
