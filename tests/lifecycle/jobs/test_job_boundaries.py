"""What a slot's or a Group's author can make a lifecycle Job do (issue 15): the pass against the lab API server."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.lab

JOBS_NS = "homecluster-jobs"


async def test_jobs_run_in_a_namespace_of_their_own_and_mount_only_its_secrets(env):
    # A slot that names the operator's own Secret (here the CA's) by name only: with --job-namespace the
    # Job runs where only power credentials live, so the name can only ever mean a Secret of that namespace.
    await env.lab.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": JOBS_NS}})
    env.ctx.job_namespace = JOBS_NS
    await env.group()
    await env.slot()
    await env.lab.patch("nodes.infra.homecluster.dev", "worker-01", {"spec": {"power": {"ipmi": {
        "credentialsSecretRef": {"name": "homecluster-ca"}}}}})
    await env.claim()
    await env.step(times=2)
    assert env.jobs() == []  # nothing in the operator's namespace
    [job] = env.lab.list("jobs.batch", JOBS_NS)
    assert job["metadata"]["name"] == "c1-startup"
    pod = job["spec"]["template"]["spec"]
    [secret] = [v["secret"] for v in pod["volumes"] if "secret" in v]
    assert secret["secretName"] == "homecluster-ca" and [i["key"] for i in secret["items"]] == ["username", "password"]
    assert env.claim_status()["phase"] == "booting" and env.claim_status()["startupJob"] == "c1-startup"
    # the pass reads its Jobs from that namespace: the Job's end is seen there
    await env.lab.patch("jobs.batch", "c1-startup", {"status": {"conditions": [
        {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded", "message": "x"}], "failed": 1}},
        namespace=JOBS_NS, subresource="status")
    await env.step(times=3)
    assert env.claim_status()["phase"] == "failed", env.claim_status()


async def test_a_secret_of_the_operators_namespace_is_refused_naming_the_field(env):
    await env.lab.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": JOBS_NS}})
    env.ctx.job_namespace = JOBS_NS
    await env.group()
    await env.slot()
    await env.lab.patch("nodes.infra.homecluster.dev", "worker-01", {"spec": {"power": {"ipmi": {
        "credentialsSecretRef": {"name": "homecluster-ca", "namespace": "homecluster-system"}}}}})
    await env.claim()
    await env.step(times=2)
    status = env.claim_status()
    assert status["phase"] == "failed" and status["reason"] == "StartupJobFailed"
    message = status["conditions"][-1]["message"]
    assert "spec.power.ipmi.credentialsSecretRef.namespace" in message and JOBS_NS in message
    assert env.lab.list("jobs.batch", JOBS_NS) == [] and env.jobs() == []


@pytest.mark.parametrize("jobs,field", [({"image": "evil.example/miner:latest"}, "spec.jobs.image"),
                                        ({"serviceAccountName": "homecluster-controller"}, "spec.jobs.serviceAccountName")])
async def test_a_group_admitted_without_the_webhook_still_gets_no_job(env, jobs, field):
    # The webhook was down (or the allow-lists changed) when the Group was written: the builder refuses it.
    await env.group(jobs=jobs)
    await env.slot()
    await env.claim()
    await env.step(times=2)
    status = env.claim_status()
    assert status["phase"] == "failed" and status["reason"] == "StartupJobFailed", status
    message = status["conditions"][-1]["message"]
    assert 'Group "workers"' in message and field in message, message
    assert env.jobs() == []


async def test_an_allowed_image_runs(env):
    env.ctx.job_images = ("registry.lan/runner:2",)
    await env.group(jobs={"image": "registry.lan/runner:2"})
    await env.slot()
    await env.claim()
    await env.step(times=2)
    [job] = env.jobs()
    assert job["spec"]["template"]["spec"]["containers"][0]["image"] == "registry.lan/runner:2"


@pytest.mark.parametrize("owned", [False, True])
async def test_a_job_that_is_not_the_claims_is_never_adopted(env, owned):
    # A Job already holds the startup Job's name but belongs to something else (or nothing): the claim must not
    # read its outcome as its own boot. It is refused, reported on the claim, and left alone.
    from homecluster import names
    await env.group()
    slot = await env.slot()
    owner = {"apiVersion": "infra.homecluster.dev/v2alpha1", "kind": "Node", "name": "worker-01",
             "uid": slot["metadata"]["uid"], "controller": True} if owned else None  # another object that exists
    metadata = {"name": "c1-startup", "namespace": "homecluster-system",
                "labels": {names.LABEL_SLOT: "worker-01", names.LABEL_JOB_KIND: "startup",
                           names.LABEL_MANAGED_BY: names.MANAGED_BY, names.LABEL_CLAIM: "c1"}}
    # not a controller: a reference that only says "part of" owns nothing, so the Job still belongs to no owner
    bystander = {"apiVersion": "infra.homecluster.dev/v2alpha1", "kind": "Node", "name": "worker-01",
                 "uid": slot["metadata"]["uid"]}
    metadata["ownerReferences"] = [owner] if owner else [bystander]
    await env.lab.create({"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata, "spec": {
        "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "x", "image": "evil:1"}]}}}})
    await env.claim()
    await env.step(times=3)
    status = env.claim_status()
    assert status["phase"] == "failed" and status["reason"] == "StartupJobFailed", status
    message = status["conditions"][-1]["message"]
    belongs = f'Node "worker-01" (uid {slot["metadata"]["uid"]})' if owned else "no owner"
    claim_uid = env.get("nodeclaims.infra.homecluster.dev", "c1")["metadata"]["uid"]
    assert (f"Job homecluster-system/c1-startup already exists and belongs to {belongs}, not to this step's owner "
            f"(uid {claim_uid}); it was not adopted") in message, message
    [job] = env.jobs()
    assert job["spec"]["template"]["spec"]["containers"][0]["image"] == "evil:1"  # untouched
    events = [e for e in env.lab.list("events", "default") if "c1-startup" in e.get("message", "")]
    assert events, "the refusal is an Event too"
