"""Metrics and RBAC checked against what really runs: `homecluster run` in the lab through a whole lifecycle.

One lab (4 simulated machines over real IPMI, the Job executor running the real playbooks, the operator as a
subprocess serving the provider and /metrics on 127.0.0.1:<free port>), one scenario:

1. hand-made claims on worker-03 and worker-04, whose machines never boot. worker-03's boot fails (its
   startup Job waits for the boot check port, which never opens: StartupJobTimedOut, or StartupJobFailed
   when the playbook's own wait ends first) and fires a forced shutdown Job; worker-04's claim is deleted while booting, so the
   reversal stops (deletes) its still-running startup Job, fires a forced shutdown and ends completed;
2. cluster-autoscaler's IncreaseSize(2) over real gRPC -> worker-01 and worker-02 boot to ready. During the
   scale-up /metrics is scraped again and again, and each scrape is compared with a list of the NodeClaims
   taken right after it: `homecluster_claims{phase,group}` must agree with the API server (a scrape may
   race a write, so it is retried until the two agree -- and they must agree, mid-boot included);
3. a Pod bound to worker-02, then DeleteNodes(worker-02) -> cordon, drain (the Pod is evicted through the
   Eviction API), power off, completed, the claim released;
4. the failed claim of step 1 is collected by ttlSecondsAfterFinished (the Group's, shortened here);
5. worker-03 switched on by hand (its BMC's power-on, as a person would): a machine no claim wants is shut
   down by a graceful shutdown Job, whose playbook cordons the Node itself (the operator's reversal cordons
   before a scale-down, so this is the path where the Job's own cordon patch runs);
6. a claim the operator cannot launch (the API server refuses its Job create with a real 500) is canceled
   by DecreaseTargetSize while pending.
Waits are generous (the suite shares 2 cores with everything else); the scenario itself takes ~25 s.
At the end the provider's RPC counters, the transitions, the failures and the boot timings are checked
against what the scenario did, and the lab API server's request log is compared with config/default's
RBAC both ways, for the operator's identity (its user agents) and for the lifecycle Jobs' (the user agent of
the `kubernetes` client the collection's modules use): every request allowed, every grant used -- or listed
below with the reason the lab cannot exercise it -- and no wildcards.
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections import Counter
from typing import Any

import aiohttp
import pytest
from integration_pool import CLAIMS, SLOTS, Pool, Timeline, lab_settings, set_fault
from support.waits import until
from prometheus_client.parser import text_string_to_metric_families
from provider_client import GROUP, ProviderClient, from_corev1

from homecluster import names
from homecluster.jobs.manifest import JOB_VARS_ANNOTATION
from homecluster_lab.cluster import LabCluster, LabConfig, free_port

import rbac_audit  # tests/install: the RBAC rules of config/default and the matcher


pytestmark = [pytest.mark.lab, pytest.mark.slow]

GROUPS = "groups.infra.homecluster.dev"
SETTINGS = {
    "startup_job_timeout": "30s", "job_poll_interval": "1s", "registration_wait": "3s", "readiness_gate": "6s",
    "uncordon_retry_ceiling": "1s", "slack": "1s", "shutdown_job_timeout": "30s", "shutdown_holdoff": "15s",
    # the lab's Group carries ttlSecondsAfterFinished (600), which wins over this; the test shortens both
    "claim_ttl": "3s",
}
TTL_SECONDS = 3
WAIT = 120.0  # seconds: the bound of each wait (normally a few seconds), for a suite on 2 busy cores

# Grants of the operator's roles the lab cannot exercise, with the reason. Anything else granted and unused
# fails the test: drop the rule from config/rbac, or make the scenario use it.
OPERATOR_EXEMPT = {
    ("infra.homecluster.dev", "nodeclaims/finalizers", "update"):
        "needed only under the OwnerReferencesPermissionEnforcement admission plugin (a Job's ownerReference to "
        "its claim with blockOwnerDeletion); the lab API server does not run that plugin, so no request is made",
    ("infra.homecluster.dev", "nodes/finalizers", "update"):
        "the same admission plugin, for Jobs owned by a slot; the lab does not run it",
    ("batch", "jobs", "get"):
        "lifecycle/jobio.create_job reads a Job only when its create answers 409 AlreadyExists and the operator's "
        "cache does not hold that Job (a create that landed while its answer was lost); the create result is "
        "written through to the cache and a restart re-lists, so the lab cannot produce that race on demand",
    ("", "pods", "get"):
        "read only by the eviction webhook (operator/admission.py), when a lifecycle Job's token asks to evict a pod; "
        "the lab API server calls no webhook on pods/eviction, and tests/k8s/test_k8s_job_confinement.py proves the "
        "grant on kube-apiserver"
}
JOB_EXEMPT: dict[tuple[str, str, str], str] = {}
# Grants a whole lifecycle may or may not use, by timing alone: neither idle nor stale is a finding for them.
OPERATOR_MAYBE = {
    ("", "events", "list"):
        "lifecycle/jobpods reads a startup pod's Events only while that pod is still Pending when the boot monitor "
        "looks (to tell a kubelet that keeps failing to mount a Secret from a slow start); in the lab the pod "
        "usually runs before the first look, so whether this lifecycle reads them depends on the machine's load",
}


# ---- metrics ----------------------------------------------------------------------------------------------

async def scrape(session: aiohttp.ClientSession, url: str) -> dict[tuple[str, tuple], float]:
    async with session.get(url, timeout=aiohttp.ClientTimeout(total=5)) as resp:
        assert resp.status == 200, f"GET {url}: HTTP {resp.status}"
        text = await resp.text()
    out: dict[tuple[str, tuple], float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def claims_gauge(samples: dict[tuple[str, tuple], float]) -> dict[tuple[str, str], int]:
    """{(phase, group): n} from homecluster_claims, zeros left out."""
    return {(dict(labels)["phase"], dict(labels)["group"]): int(v) for (name, labels), v in samples.items()
            if name == "homecluster_claims" and v}


def claims_in_api(lab: LabCluster) -> dict[tuple[str, str], int]:
    """The same count from the API server: a claim's phase (empty reads as pending) and its slot's group."""
    groups = {s["metadata"]["name"]: s["spec"].get("groupRef", "") for s in lab.api.list(SLOTS)}
    return dict(Counter(((c.get("status") or {}).get("phase") or "pending", groups.get(c["spec"]["slotRef"], ""))
                        for c in lab.api.list(CLAIMS)))


async def agreeing_scrape(session: aiohttp.ClientSession, url: str, lab: LabCluster,
                          timeout: float = 20.0) -> tuple[dict, dict[tuple[str, str], int]]:
    """A scrape whose claims gauge equals the API server's claims listed right after it.

    The operator's cache follows the API server through a watch, so a scrape that races a write may be one
    event behind: retry until they agree, and fail if they do not within `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        samples = await scrape(session, url)
        gauge, listed = claims_gauge(samples), claims_in_api(lab)
        if gauge == listed:
            return samples, listed
        if time.monotonic() > deadline:
            raise AssertionError(f"homecluster_claims {gauge} never agreed with the API server's claims {listed} "
                                 f"within {timeout}s")
        await asyncio.sleep(0.02)


def value(samples: dict, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def total(samples: dict, name: str, **labels: str) -> float:
    """Sum over the series of `name` whose labels include `labels`."""
    return sum(v for (n, ls), v in samples.items() if n == name and labels.items() <= dict(ls).items())


# ---- the scenario -----------------------------------------------------------------------------------------

def status(obj: dict[str, Any] | None) -> dict[str, Any]:
    return (obj or {}).get("status") or {}


def claim_on(lab: LabCluster, slot: str) -> dict[str, Any] | None:
    mine = [c for c in lab.claims() if c["spec"]["slotRef"] == slot]
    return max(mine, key=lambda c: int(c["metadata"]["resourceVersion"])) if mine else None


def shutdowns_of(jobs: Timeline, slot: str) -> set[str]:
    """Names of every shutdown Job a watch saw for `slot`."""
    return {o["metadata"]["name"] for _, _, o in jobs.events
            if (o["metadata"].get("labels") or {}).get(names.LABEL_SLOT) == slot
            and (o["metadata"].get("labels") or {}).get(names.LABEL_JOB_KIND) == "shutdown"}


def forced_shutdowns(jobs: Timeline, claim: str) -> list[str]:
    """Names of the forced shutdown Jobs ever created for `claim` (a watch saw them, even if since collected)."""
    out = []
    for _, _, obj in jobs.events:
        labels = obj["metadata"].get("labels") or {}
        template = ((obj.get("spec") or {}).get("template") or {}).get("metadata") or {}
        job_vars = json.loads((template.get("annotations") or {}).get(JOB_VARS_ANNOTATION) or "{}")
        if labels.get(names.LABEL_CLAIM) == claim and labels.get(names.LABEL_JOB_KIND) == "shutdown" \
                and job_vars.get("force") is True and obj["metadata"]["name"] not in out:
            out.append(obj["metadata"]["name"])
    return out


def bound_pod(node: str) -> dict[str, Any]:
    """A workload Pod the scheduler put on `node`. It has no controller; the drain role evicts such Pods
    (its drain_force defaults to true), so the shutdown Job must use the Eviction API on it."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web-0", "namespace": "default", "labels": {"app": "web"}},
            "spec": {"nodeName": node, "containers": [{"name": "web", "image": "registry.example/web:1"}]}}


async def test_metrics_agree_with_the_api_and_rbac_matches_what_runs(tmp_path):
    why_not = await rbac_audit.distinct_job_agent()
    if why_not:
        pytest.skip(why_not)
    job_agent = rbac_audit.job_user_agent()
    metrics_url = f"http://127.0.0.1:{free_port('127.0.0.1')}/metrics"
    cfg = LabConfig(slots=4, driver="ipmi", boot_seconds=1.0, ready_taints_clear_seconds=0.5,
                    provider_address="127.0.0.1:0", workdir=tmp_path / "lab", settings=lab_settings(SETTINGS),
                    require_operator=True,
                    operator_args=("--metrics-address", metrics_url.removeprefix("http://").removesuffix("/metrics")))
    async with contextlib.AsyncExitStack() as stack:
        lab = await stack.enter_async_context(LabCluster(cfg))
        ca = await stack.enter_async_context(ProviderClient(lab.provider_address))
        http = await stack.enter_async_context(aiohttp.ClientSession())
        assert lab.operator is not None, "the provider and /metrics must be the operator's"
        pool = Pool(lab)
        jobs = await Timeline(lab.api.url, f"/apis/batch/v1/namespaces/{cfg.namespace}/jobs").start()
        stack.push_async_callback(jobs.stop)
        log = lambda: lab.operator.log_tail(25) if lab.operator else ""  # noqa: E731
        await lab.api.patch(GROUPS, GROUP, {"spec": {"ttlSecondsAfterFinished": TTL_SECONDS}})
        before, _ = await agreeing_scrape(http, metrics_url, lab)
        assert claims_gauge(before) == {}

        # 1. a boot that fails (worker-03), and a boot that is called off while its startup Job runs (worker-04)
        for slot in ("worker-03", "worker-04"):
            await set_fault(pool, slot, "never-boots")
        await pool.claim("worker-03-doomed", "worker-03")
        await pool.claim("worker-04-recalled", "worker-04")

        # 2. the autoscaler scales up by two; scrape while the claims boot
        await ca.increase(2)
        assert await ca.target() == 4  # the hand-made claims are live capacity too
        scaled = {"worker-01", "worker-02"}
        assert {c["spec"]["slotRef"] for c in lab.claims() if c["spec"].get("requestedBy") == "cluster-autoscaler"} \
            == scaled
        agreed_mid_boot: list[dict] = []
        deadline = time.monotonic() + WAIT
        recalled = False
        while not all(status(claim_on(lab, s)).get("phase") == "ready" for s in scaled):
            if not recalled and status(lab.api.get(CLAIMS, "worker-04-recalled")).get("phase") == "booting":
                await lab.api.delete(CLAIMS, "worker-04-recalled")  # the finalizer runs the reversal
                recalled = True
            assert time.monotonic() < deadline, f"worker-01/02 never both ready; operator log:\n{log()}"
            _, listed = await agreeing_scrape(http, metrics_url, lab)
            if any(phase in ("pending", "booting") for phase, _ in listed):
                agreed_mid_boot.append(listed)
            await asyncio.sleep(0.1)
        assert agreed_mid_boot, "no scrape agreed with the API server while a claim was still booting"
        assert any(n >= 1 for listed in agreed_mid_boot for (phase, _), n in listed.items() if phase == "booting")
        async def both_boots_timed():
            # a ready move's boot is timed after its Event is posted: a scrape in between sees the move but not yet
            # its timing (under load: homecluster_boot_seconds_count 0 with both claims ready)
            samples, listed = await agreeing_scrape(http, metrics_url, lab)
            return (samples, listed) if total(samples, "homecluster_boot_seconds_count") >= 2 else None

        samples, listed = await until(both_boots_timed, "both boots timed in /metrics", 20)
        assert listed.get(("ready", GROUP)) == 2, listed
        assert value(samples, "homecluster_provider_rpcs_total", method="NodeGroupIncreaseSize", code="OK") == 1
        assert value(samples, "homecluster_provider_rpcs_total", method="NodeGroupTargetSize", code="OK") == 1
        assert value(samples, "homecluster_provider_rpc_seconds_count", method="NodeGroupIncreaseSize") == 1
        assert total(samples, "homecluster_claim_transitions_total", phase="booting") == 4
        assert total(samples, "homecluster_claim_transitions_total", phase="ready") == 2
        assert total(samples, "homecluster_boot_seconds_count") == 2
        assert total(samples, "homecluster_gate_seconds_count") == 2
        assert total(samples, "homecluster_registration_seconds_count") == 2
        assert 0 < total(samples, "homecluster_boot_seconds_sum") < 2 * WAIT
        assert total(samples, "homecluster_launch_attempt_count") == 4  # worker-01, -02 and the hand-made -03, -04
        assert total(samples, "homecluster_launch_attempt_sum") == 4  # all first attempts

        # 3. scale down one machine that runs a Pod: cordon, drain (evict the Pod), power off, completed
        node = next(n for n in lab.api.list("nodes") if n["metadata"]["name"] == "worker-02")
        await lab.api.create(bound_pod("worker-02"))
        doomed = claim_on(lab, "worker-02")
        await ca.delete([from_corev1(node)])
        await until(lambda: lab.api.get(CLAIMS, doomed["metadata"]["name"]) is None,
                    lambda: f"the released claim to complete and go; operator log:\n{log()}", WAIT, interval=0.2)
        assert lab.machine("worker-02").power_state() == "off"
        assert status(lab.api.get(SLOTS, "worker-02"))["lastClaim"]["phase"] == "completed"
        assert lab.api.get("pods", "web-0", "default") is None, "the drain did not evict the Pod on worker-02"

        # 1 and 4. the failed boot fired a forced shutdown, and the failed claim was collected after its TTL
        await until(lambda: (status(lab.api.get(SLOTS, "worker-03")).get("lastClaim") or {}).get("phase")
                    == "failed", lambda: f"worker-03's claim to fail; operator log:\n{log()}", WAIT, interval=0.2)
        await until(lambda: lab.api.get(CLAIMS, "worker-03-doomed") is None,
                    lambda: f"the failed claim to be collected ({status(lab.api.get(CLAIMS, 'worker-03-doomed'))})",
                    WAIT, interval=0.2)
        failed = status(lab.api.get(SLOTS, "worker-03"))["lastClaim"]
        assert failed["reason"] in ("StartupJobTimedOut", "StartupJobFailed"), failed
        assert forced_shutdowns(jobs, "worker-03-doomed"), "no forced shutdown Job was created for the failed boot"
        # the recalled boot: its running startup Job stopped, a forced shutdown, then completed and released
        assert recalled, "worker-04's claim never reached booting"
        await until(lambda: lab.api.get(CLAIMS, "worker-04-recalled") is None,
                    lambda: "the recalled claim to be released "
                            f"({status(lab.api.get(CLAIMS, 'worker-04-recalled'))})", WAIT,
                    interval=0.2)
        assert status(lab.api.get(SLOTS, "worker-04"))["lastClaim"]["phase"] == "completed"
        stopped = [e.name for e in pool.operator_writes() if e.resource == "jobs" and e.verb == "delete"]
        assert "worker-04-recalled-startup" in stopped, f"the recalled boot's startup Job was not stopped: {stopped}"
        assert forced_shutdowns(jobs, "worker-04-recalled"), "no forced shutdown Job for the recalled boot"

        # 5. a machine nobody asked for: switched on by hand, shut down gracefully by a Job that cordons it.
        # worker-03: its Node never joined, so nobody has cordoned it yet (worker-02's Node still carries the
        # reversal's cordon, and the Job's cordon would have nothing to do)
        await until(lambda: lab.machine("worker-03").power_state() == "off",
                    lambda: f"the forced shutdown to power worker-03 off; operator log:\n{log()}", WAIT, interval=0.2)
        await set_fault(pool, "worker-03", None)
        shutdowns_before = shutdowns_of(jobs, "worker-03")
        lab.machine("worker-03").power_on(source="power button")
        await until(lambda: status(lab.api.get(SLOTS, "worker-03")).get("phase") == "draining",
                    lambda: f"worker-03 to be seen on and unwanted; operator log:\n{log()}", WAIT, interval=0.1)
        await until(lambda: lab.machine("worker-03").power_state() == "off"
                    and status(lab.api.get(SLOTS, "worker-03")).get("phase") == "off",
                    lambda: f"the unwanted machine to be shut down; operator log:\n{log()}", WAIT, interval=0.2)
        assert shutdowns_of(jobs, "worker-03") - shutdowns_before, "no shutdown Job for the unwanted machine"
        assert claim_on(lab, "worker-03") is None, "a machine switched on by hand must not create a claim"

        # 6. cancel a claim that cannot launch: the API server refuses the operator's Job create
        lab.api.faults.fail_next("jobs.batch", count=10_000, code=500, verbs=("create",))
        await ca.increase(1)
        pending = next(c for c in lab.claims() if status(c).get("phase") in (None, "pending"))
        await until(lambda: any(e.resource == "jobs" and e.verb == "create" and e.code >= 500
                                for e in pool.operator_writes()), "the operator's refused Job create", WAIT)
        assert status(lab.api.get(CLAIMS, pending["metadata"]["name"])).get("phase") in (None, "pending")
        await ca.decrease(-1)
        lab.api.faults.clear()
        await until(lambda: lab.api.get(CLAIMS, pending["metadata"]["name"]) is None,
                    "the canceled claim to go", WAIT)

        # the end: the gauge agrees with the API server, the counters with what the scenario did
        samples, listed = await agreeing_scrape(http, metrics_url, lab)
        assert listed == {("ready", GROUP): 1}, listed
        for method in ("NodeGroupIncreaseSize", "NodeGroupDeleteNodes", "NodeGroupDecreaseTargetSize"):
            want = 2 if method == "NodeGroupIncreaseSize" else 1
            assert value(samples, "homecluster_provider_rpcs_total", method=method, code="OK") == want, method
        assert total(samples, "homecluster_provider_rpcs_total", code="OK") == \
            total(samples, "homecluster_provider_rpcs_total")  # nothing in this scenario was refused
        assert value(samples, "homecluster_claim_transitions_total", phase="completed", reason="Released") == 2
        # the pending claim had its finalizer before the Job create failed: the reversal cancels it
        assert value(samples, "homecluster_claim_transitions_total", phase="completed", reason="Canceled") == 1
        assert value(samples, "homecluster_claim_failures_total", reason=failed["reason"]) == 1
        assert total(samples, "homecluster_job_duration_seconds_count", kind="shutdown") >= 1
        assert total(samples, "homecluster_api_writes_total", resource="nodeclaims", verb="create") == 3

    # RBAC, after the operator stopped (its shutdown requests are in the log too)
    entries = lab.api.audit.entries
    operator = rbac_audit.rbac_both_ways(entries, rbac_audit.MANAGER_SA, rbac_audit.OPERATOR_USER_AGENTS,
                                         OPERATOR_EXEMPT)
    job_rbac = rbac_audit.rbac_both_ways(entries, rbac_audit.JOB_SA, job_agent, JOB_EXEMPT)
    assert rbac_audit.requests_from_audit(entries, job_agent), f"no request from the Job pods ({job_agent})"
    assert [str(r) for r in operator.refused] == [], f"the operator made requests its RBAC refuses: {operator.refused}"
    idle = [r for r in operator.idle if tuple(r) not in OPERATOR_MAYBE]
    assert idle == [], f"the operator's roles grant what it never used in a whole lifecycle: {idle}"
    assert operator.stale == [], f"exempt grants used after all (or no longer granted): {operator.stale}"
    assert [str(r) for r in job_rbac.refused] == [], \
        f"the Job pods made requests homecluster-job refuses: {job_rbac.refused}"
    assert job_rbac.idle == [], f"homecluster-job grants what the playbooks never used: {job_rbac.idle}"
    assert job_rbac.stale == [], f"exempt grants used after all (or no longer granted): {job_rbac.stale}"
    objects = rbac_audit.render(rbac_audit.REPO / "config" / "default")
    for sa in (rbac_audit.MANAGER_SA, rbac_audit.JOB_SA):
        assert rbac_audit.wildcards(rbac_audit.rules_for_service_account(objects, *sa)) == []
