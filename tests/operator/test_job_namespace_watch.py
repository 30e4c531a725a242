"""With its Jobs in a namespace of their own, the operator reads Jobs there alone, and a namespace that is not
there is named at start.

The chart's `jobNamespace` (the operator's --job-namespace) grants the operator its Jobs' rights in that namespace
only. The real operator used to watch Jobs in its own namespace too (kopf's `namespaces` was both), which a real
API server refuses with 403 there; kopf gave up after its retries and the operator exited, restarted by the
kubelet, again and again (found by tests/k8s/test_k8s_realnode_helm.py on the real node). Here the real operator
runs against the lab API server, which records every request's namespace: every list and watch of Jobs it makes
is in the Jobs' namespace. kopf starts no watch at all, not even of claims, while none of its namespaces exists,
so the operator refuses to start with a --job-namespace that names none, saying what to do.
"""
from __future__ import annotations

import argparse
import asyncio
import threading

import pytest
from support.waits import until

from homecluster.operator import main as operator_main

pytestmark = pytest.mark.lab
NS = "homecluster-system"
JOBS_NS = "homecluster-jobs"


def arguments(lab) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    operator_main.add_arguments(parser)
    return parser.parse_args(["--kubeconfig", str(lab.kubeconfig_path), "--namespace", NS,
                              "--job-namespace", JOBS_NS, "--no-webhook", "--no-provider"])


def test_kopf_watches_namespaced_kinds_where_the_jobs_run_only():
    assert operator_main.watched_namespaces(JOBS_NS) == [JOBS_NS]


async def test_a_job_namespace_that_is_not_there_is_named_at_start(lab):
    stop = asyncio.Event()
    asyncio.get_running_loop().call_later(20, stop.set)  # an operator that starts anyway stops, and this fails
    with pytest.raises(SystemExit) as refused:
        await operator_main.main(arguments(lab), stop)  # awaited here: a SystemExit in a task of its own ends the loop
    assert f"--job-namespace '{JOBS_NS}' names no namespace: create it first" in str(refused.value)
    assert lab.audit.count("jobs") == 0 and lab.audit.count("nodeclaims") == 0  # refused before any watch


@pytest.fixture
async def operator(lab):
    await lab.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": JOBS_NS}})
    stop = threading.Event()
    thread = threading.Thread(target=lambda: asyncio.run(operator_main.main(arguments(lab), stop)), daemon=True)
    thread.start()
    yield thread
    stop.set()
    await asyncio.to_thread(thread.join, 15)


async def test_the_operator_lists_and_watches_jobs_in_their_own_namespace_only(lab, operator):
    reads = lambda: lab.audit.select("jobs", verbs=["list", "watch"])  # noqa: E731
    await until(lambda: any(e.verb == "watch" and "kopf" in e.user_agent for e in reads()),
                "the operator watching Jobs", 30)
    assert {e.namespace for e in reads()} == {JOBS_NS}, [(e.verb, e.namespace, e.user_agent) for e in reads()]
