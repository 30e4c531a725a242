"""Fixtures for the lab: a started in-memory API server, a small test CRD, and kubectl against it."""
from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Awaitable, Callable

import pytest
from lab_objects import TEST_GROUP, WIDGET_CRD

from homecluster_lab.apiserver import LabAPIServer

REPO = Path(__file__).resolve().parents[2]
CRD_DIR = REPO / "config" / "crd"


def project_crd_dir() -> Path | None:
    """config/crd when another part of the project has generated CRDs into it, else None."""
    if CRD_DIR.is_dir() and any(CRD_DIR.glob("*.y*ml")):
        return CRD_DIR
    return None


@pytest.fixture
async def lab_api(tmp_path: Path):
    """A started lab API server (function-scoped: every test gets a clean store) with our CRDs loaded."""
    async with LabAPIServer(crd_dir=project_crd_dir(), workdir=tmp_path / "lab-api", gc_interval=0.05) as api:
        yield api


@pytest.fixture
async def widgets(lab_api: LabAPIServer) -> str:
    """Registers the test CRD; returns its resource name for helpers ("widgets.lab.homecluster.dev")."""
    await lab_api.create(WIDGET_CRD)
    return f"widgets.{TEST_GROUP}"


@dataclass
class Run:
    rc: int
    out: str
    err: str

    def check(self) -> "Run":
        assert self.rc == 0, f"kubectl failed ({self.rc}): {self.err}\n{self.out}"
        return self


@pytest.fixture
def kubectl(lab_api: LabAPIServer, tmp_path: Path) -> Callable[..., Awaitable[Run]]:
    """`await kubectl("get", "nodes")`: the real kubectl, as a subprocess, against the lab (never blocks the
    server's loop). `input` feeds stdin (for `apply -f -`)."""
    home = tmp_path / "kubectl-home"
    home.mkdir(exist_ok=True)
    env = {**os.environ, "HOME": str(home), "KUBECONFIG": str(lab_api.kubeconfig_path)}

    async def run(*args: str, input: str | None = None, timeout: float = 60) -> Run:
        proc = await asyncio.create_subprocess_exec(
            "kubectl", "--kubeconfig", str(lab_api.kubeconfig_path), "--cache-dir", str(home / "cache"), *args,
            stdin=asyncio.subprocess.PIPE if input is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env)
        try:
            out, err = await asyncio.wait_for(proc.communicate(input.encode() if input else None), timeout)
        except asyncio.TimeoutError:
            proc.kill()
            await proc.wait()
            raise
        return Run(proc.returncode or 0, out.decode(), err.decode())
    return run


def node(name: str, ready: bool = True, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "spec": {},
            "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
                       "nodeInfo": {"kubeletVersion": "v1.32.0"}}}


def pod(name: str, node_name: str, namespace: str = "default", labels: dict | None = None,
        owner: dict | None = None, phase: str = "Running") -> dict[str, Any]:
    md: dict[str, Any] = {"name": name, "namespace": namespace, "labels": labels or {}}
    if owner:
        md["ownerReferences"] = [owner]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": md,
            "spec": {"nodeName": node_name, "containers": [{"name": "c", "image": "busybox"}]},
            "status": {"phase": phase, "conditions": [{"type": "Ready", "status": "True"}],
                       "containerStatuses": [{"name": "c", "ready": True, "restartCount": 0}]}}


def owner_ref(obj: dict[str, Any], controller: bool = True) -> dict[str, Any]:
    return {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "name": obj["metadata"]["name"],
            "uid": obj["metadata"]["uid"], "controller": controller, "blockOwnerDeletion": True}


@pytest.fixture
def objs():
    """Builders for common objects: objs.node(...), objs.pod(...), objs.owner_ref(obj)."""
    import types
    return types.SimpleNamespace(node=node, pod=pod, owner_ref=owner_ref)
