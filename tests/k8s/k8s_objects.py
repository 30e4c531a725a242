"""Our objects for the tests against the real control plane: the CRDs (config/crd), the samples
(config/samples), and installing the CRDs through the API as `kubectl apply -k config/crd` would.
(Imported by name: `conftest` is ambiguous across test folders.)"""
from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import yaml
from k8s_rest import Rest

REPO = Path(__file__).resolve().parents[2]
CRD_DIR = REPO / "config" / "crd"
SAMPLES = REPO / "config" / "samples"
API = "/apis/infra.homecluster.dev/v2alpha1"
PLURALS = {"Group": "groups", "Node": "nodes", "NodeClaim": "nodeclaims"}


def load_yaml(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def crds() -> list[dict[str, Any]]:
    return [d for p in sorted(CRD_DIR.glob("infra.homecluster.dev_*.yaml")) for d in load_yaml(p)]


def sample(name: str) -> dict[str, Any]:
    return load_yaml(SAMPLES / name)[0]


def path_of(obj: dict[str, Any]) -> str:
    return f"{API}/{PLURALS[obj['kind']]}"


async def install_crds(rest: Rest, timeout: float = 30) -> None:
    """Create our CRDs, wait until each is Established and its resource answers a list."""
    for crd in crds():
        status, body = await rest.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
        assert status in (201, 409), body
    deadline = time.monotonic() + timeout
    for crd in crds():
        while True:
            _, body = await rest.request(
                "GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd['metadata']['name']}")
            conditions = {c["type"]: c["status"] for c in (body.get("status") or {}).get("conditions") or []}
            if conditions.get("Established") == "True":
                break
            assert time.monotonic() < deadline, f"{crd['metadata']['name']} not Established: {body.get('status')}"
            await asyncio.sleep(0.1)
    for plural in PLURALS.values():
        while (await rest.request("GET", f"{API}/{plural}"))[0] != 200:
            assert time.monotonic() < deadline, f"{plural} is not served"
            await asyncio.sleep(0.1)
