"""The exact scale-up with pods that tolerate the Group's readiness taint beside pods that do not, every version.

test_k8s_autoscaler.py proves N claims for N pods that do not tolerate the readiness taint. Here one
Deployment's pods tolerate it (the scheduler may bind them to a Node the moment it registers, taint and all)
and another's do not (they wait for the taint to go); each pod needs 3 of a machine's 4 CPUs, so no two
share a machine whichever Deployment they come from. Both are created at once: the autoscaler plans for all
three pods in one scan, and over the whole test exactly three NodeClaims are created (the audit log's count,
so a claim created and deleted between two looks counts too), three machines on, three pods Running.

Costs one lab per version found (the file's module fixture) and one scale-up on each.
"""
from __future__ import annotations

import re

import pytest
import pytest_asyncio
from k8s_autoscaler import (NS, Pool, build_params, claims_created, clocks, lab_config, now, story, until_running,
                            workload)

from homecluster_lab.k8s.autoscaler import Autoscaler
from homecluster_lab.k8s.labcluster import RealLabCluster
from homecluster_lab.operator_proc import unavailable_reason

pytestmark = pytest.mark.asyncio(loop_scope="module")
BOUND = 400.0  # the waits end when the thing happens; generous for 2 loaded cores
MIX = {"tolerant": (2, True), "intolerant": (1, False)}  # Deployment -> (pods, tolerates the readiness taint)


@pytest_asyncio.fixture(scope="module", loop_scope="module", params=build_params())
async def pool(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    if unavailable_reason():
        pytest.skip(unavailable_reason())
    build = request.param
    folder = tmp_path_factory.mktemp("ca-tol-" + re.sub(r"[^\w.]", "_", build.release)[-40:])
    async with RealLabCluster(lab_config(folder, slots=sum(n for n, _ in MIX.values()))) as lab:
        async with Autoscaler.for_lab(lab, build, clocks=clocks()) as ca:
            yield Pool(lab, ca, build)


async def test_tolerating_and_intolerant_pods_buy_exactly_one_machine_each(pool: Pool, record_property) -> None:
    record_property("cluster_autoscaler", pool.build.release)
    lab, wanted = pool.lab, sum(n for n, _ in MIX.values())
    started = now()
    for app, (replicas, tolerate) in MIX.items():
        await lab.api.kube.create(f"/apis/apps/v1/namespaces/{NS}/deployments",
                                  workload(app, replicas, tolerate=tolerate))

    placed = await until_running(lab, pool.ca, {app: n for app, (n, _) in MIX.items()},
                                 f"{wanted} pods (tolerating and not) Running on bought machines", BOUND, since=started)

    hosts = {p["spec"]["nodeName"] for p in placed}
    assert len(hosts) == wanted, hosts
    assert all(lab.machine(h).power_state() == "on" for h in hosts), lab.machine_summary()
    created = claims_created(lab, started)
    assert len(created) == wanted, f"{len(created)} NodeClaims created for {wanted} pods\n{story(lab, pool.ca)}"
