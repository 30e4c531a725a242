"""Fixtures for the tests against the real control plane (lab/k8s, built by `make k8s`).

Every test here is skipped, saying why and how to fix it, when the programs are not built; nothing else
skips them. One control plane serves a test module (it takes some seconds to start): the module's tests
run in one event loop (`pytestmark = pytest.mark.asyncio(loop_scope="module")`).
"""
from __future__ import annotations

from pathlib import Path

import pytest
import pytest_asyncio
from k8s_objects import install_crds
from k8s_rest import Rest

from homecluster_lab.apiserver import LabAPIServer
from homecluster_lab.apiserver.kubeconfig import TOKEN
from homecluster_lab.k8s import binaries
from homecluster_lab.k8s.controlplane import RealControlPlane


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    reason = binaries.missing_reason()
    if reason is None:
        return
    here = Path(__file__).parent
    for item in items:
        if Path(str(item.fspath)).parent == here:
            item.add_marker(pytest.mark.skip(reason=reason))


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def real_k8s(tmp_path_factory: pytest.TempPathFactory):
    """etcd + kube-apiserver + kube-controller-manager + kube-scheduler on loopback."""
    async with RealControlPlane(tmp_path_factory.mktemp("k8s")) as cp:
        yield cp


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def real_rest(real_k8s: RealControlPlane):
    """REST as the admin (a client certificate in system:masters)."""
    rest = Rest(real_k8s.url, ssl_context=real_k8s.ssl_context())
    yield rest
    await rest.close()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def lab_api(tmp_path_factory: pytest.TempPathFactory):
    """The lab's in-memory API server (no CRDs loaded: a test installs them as on the real one)."""
    async with LabAPIServer(workdir=tmp_path_factory.mktemp("lab-api"), gc_interval=0.05) as api:
        yield api


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def lab_rest(lab_api: LabAPIServer):
    rest = Rest(lab_api.url, token=TOKEN)
    yield rest
    await rest.close()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def servers(real_rest: Rest, lab_rest: Rest) -> dict[str, Rest]:
    """Both servers, real and in-memory, with our CRDs installed through their APIs."""
    for rest in (real_rest, lab_rest):
        await install_crds(rest)
    return {"real": real_rest, "lab": lab_rest}
