"""The one installer of our CRDs (homecluster_lab.k8s.install.create_crds) against the lab's in-memory server.

The lab on the real control plane and the tests against it (tests/k8s/k8s_objects.py) use it; here it runs
over the lab's own client, cheaply: every CRD of config/crd created, Established and served, a second run
keeps what exists, and a refusal is an error that names the CRD and what the server said.
"""
from __future__ import annotations

from typing import Any

import pytest

from homecluster_lab.apiserver import LabAPIServer
from homecluster_lab.config import LabError
from homecluster_lab.k8s import install
from homecluster_lab.node.kube import Kube, KubeError

pytestmark = pytest.mark.lab


@pytest.fixture
async def server(tmp_path):
    async with LabAPIServer(workdir=tmp_path) as api:
        yield api


@pytest.fixture
async def request_of(server):
    async with Kube(str(server.kubeconfig_path)) as kube:
        async def request(method: str, path: str, body: Any = None) -> tuple[int, Any]:
            try:
                return 200, await kube.request(method, path, body)
            except KubeError as exc:
                return exc.status, exc.body
        yield request


async def test_every_crd_is_created_established_and_served_and_a_second_run_keeps_them(server, request_of):
    await install.create_crds(request_of, timeout=10)
    names = sorted(crd["metadata"]["name"] for crd in install.crds())
    assert names == ["groups.infra.homecluster.dev", "nodeclaims.infra.homecluster.dev",
                     "nodes.infra.homecluster.dev"]
    for plural in install.CRD_PLURALS:
        assert server.list(f"{plural}.infra.homecluster.dev") == []
    before = {name: server.get("customresourcedefinitions", name)["metadata"]["uid"] for name in names}
    await install.create_crds(request_of, timeout=10)  # 409 for each: kept, not an error
    assert {name: server.get("customresourcedefinitions", name)["metadata"]["uid"] for name in names} == before


async def test_a_refused_crd_names_itself_and_the_answer(server, request_of):
    server.faults.fail_next("customresourcedefinitions.apiextensions.k8s.io", code=500, verbs=("create",))
    with pytest.raises(LabError) as refused:
        await install.create_crds(request_of, timeout=10)
    assert str(refused.value).startswith(f"creating CRD {install.crds()[0]['metadata']['name']} (config/crd) "
                                         f"failed: HTTP 500: ")
