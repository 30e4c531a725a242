"""lifecycle.facts: the derived views every lifecycle module reads from one slot's facts (pure).

Which Job is still running (a finished Job whose Pods are still terminating counts), which pod of a shutdown
is still alive, the claim's own pending Jobs, when the last shutdown ended, when the machine joined, and the
claim as the boot clocks read it. Facts is built directly from objects shaped as the API returns them.
"""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

from homecluster import names
from homecluster.lifecycle.facts import Facts, active, live_pod
from homecluster.model.timestamps import format_time

NOW = datetime(2026, 12, 2, 1, 0, 0, tzinfo=timezone.utc)


def at(minutes: float) -> str:
    return format_time(NOW + timedelta(minutes=minutes))


def job(name: str, kind: str = "shutdown", outcome: str = "running", *, ended: str | None = None,
        owner: str | None = None, **status) -> dict:
    """A Job as the Job controller leaves it: Complete or Failed at `ended` (a running one has no condition)."""
    body: dict = {"metadata": {"name": name, "labels": {names.LABEL_JOB_KIND: kind}}, "status": dict(status)}
    if owner is not None:
        body["metadata"]["ownerReferences"] = [{"kind": "NodeClaim", "name": "c", "uid": owner, "controller": True}]
    if outcome == "succeeded":
        body["status"]["conditions"] = [{"type": "Complete", "status": "True", "lastTransitionTime": ended}]
        if ended is not None:
            body["status"]["completionTime"] = ended
    elif outcome == "failed":
        body["status"]["conditions"] = [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
                                         "lastTransitionTime": ended}]
    return body


def ready_node(transition: str | None = None, created: str | None = None, status: str = "True") -> dict:
    condition = {"type": "Ready", "status": status}
    if transition is not None:
        condition["lastTransitionTime"] = transition
    metadata = {"name": "worker-01", **({"creationTimestamp": created} if created else {})}
    return {"metadata": metadata, "status": {"conditions": [{"type": "MemoryPressure", "status": "False",
                                                             "lastTransitionTime": at(-99)}, condition]}}


def facts(*, jobs: list[dict] = (), node: dict | None = None, claims: list[dict] = ()) -> Facts:
    return Facts("worker-01", {"metadata": {"name": "worker-01"}}, None, list(claims), node, list(jobs), NOW)


# --- active / live_pod ------------------------------------------------------------------------------------------

def test_a_job_is_active_until_it_ends_and_while_its_pods_still_terminate():
    assert active(job("j")) is True
    assert active(job("j", outcome="succeeded", ended=at(0))) is False
    assert active(job("j", outcome="failed", ended=at(0))) is False
    assert active(job("j", outcome="failed", ended=at(0), terminating=0)) is False
    assert active(job("j", outcome="failed", ended=at(0), terminating=1)) is True
    assert active(job("j", outcome="succeeded", ended=at(0), terminating=2)) is True


def test_live_pod_is_the_first_pod_that_has_not_ended():
    succeeded, failed = {"status": {"phase": "Succeeded"}}, {"status": {"phase": "Failed"}}
    pending, running, fresh = {"status": {"phase": "Pending"}}, {"status": {"phase": "Running"}}, {"metadata": {}}
    assert live_pod([succeeded, failed, running, pending]) is running
    assert live_pod([failed, pending, running]) is pending
    assert live_pod([succeeded, fresh]) is fresh  # no phase yet: not ended
    assert live_pod([succeeded, failed]) is None
    assert live_pod([]) is None


# --- the slot's Jobs -------------------------------------------------------------------------------------------

def test_startup_job_is_the_one_the_claim_names_else_its_default_name():
    named, default = job("custom-startup", "startup"), job("c1-startup", "startup")
    f = facts(jobs=[job("other", "startup"), default, named])
    assert f.startup_job({"metadata": {"name": "c1"}, "status": {"startupJob": "custom-startup"}}) is named
    assert f.startup_job({"metadata": {"name": "c1"}, "status": {}}) is default
    assert f.startup_job({"metadata": {"name": "c1"}}) is default
    assert f.startup_job({"metadata": {"name": "c2"}}) is None
    assert f.job("other") is f.jobs[0] and f.job("nope") is None


def test_running_shutdown_is_the_first_shutdown_job_not_over_whoever_fired_it():
    startup = job("c1-startup", "startup")  # running, but not a shutdown
    done = job("c1-shutdown-1", outcome="failed", ended=at(-5))
    dying = job("c1-shutdown-2", outcome="failed", ended=at(-1), terminating=1)
    running = job("worker-01-shutdown-1-abc")
    assert facts(jobs=[startup, done]).running_shutdown() is None
    assert facts(jobs=[startup, done, dying, running]).running_shutdown() is dying
    assert facts(jobs=[running, dying]).running_shutdown() is running
    assert facts(jobs=[startup, done, running]).shutdown_jobs() == [done, running]


def test_running_jobs_of_a_claim_are_its_own_jobs_that_have_not_ended():
    mine = job("c1-startup", "startup", owner="uid-1")
    mine_done = job("c1-shutdown-1", outcome="succeeded", ended=at(-1), owner="uid-1")
    mine_dying = job("c1-shutdown-2", outcome="failed", ended=at(0), owner="uid-1", terminating=1)
    theirs = job("c2-startup", "startup", owner="uid-2")
    f = facts(jobs=[mine, mine_done, mine_dying, theirs])
    assert f.running_jobs_of({"metadata": {"name": "c1", "uid": "uid-1"}}) == [mine, mine_dying]
    assert f.running_jobs_of({"metadata": {"name": "c3", "uid": "uid-3"}}) == []
    unowned = job("x", owner="")  # a controller reference without a uid is nobody's
    assert facts(jobs=[unowned, mine]).running_jobs_of({"metadata": {"name": "c0"}}) == []


def test_last_shutdown_end_is_the_latest_end_of_a_shutdown_that_is_over():
    assert facts(jobs=[]).last_shutdown_end() is None
    early = job("s-1", outcome="failed", ended=at(-10))
    late = job("s-2", outcome="succeeded", ended=at(-3))
    running = job("s-3")
    dying = job("s-4", outcome="failed", ended=at(-1), terminating=1)  # not over yet: its end does not count
    startup = job("c1-startup", "startup", outcome="succeeded", ended=at(-2))  # not a shutdown
    unknown = job("s-5", outcome="succeeded")  # Complete but no completionTime: no end known
    f = facts(jobs=[early, late, running, dying, startup, unknown])
    assert f.last_shutdown_end() == NOW - timedelta(minutes=3)
    assert facts(jobs=[late, early]).last_shutdown_end() == NOW - timedelta(minutes=3)
    assert facts(jobs=[running, unknown, startup]).last_shutdown_end() is None


# --- registration and the boot clocks ---------------------------------------------------------------------------

BOOTING = {"metadata": {"name": "c1", "uid": "uid-1"}, "spec": {"slotRef": "worker-01"}, "status": {"phase": "booting"}}


def test_registered_at_is_the_ready_transition_else_the_nodes_creation_else_now():
    assert facts(node=None).registered_at(BOOTING) is None
    assert facts(node=ready_node(at(-4), status="False")).registered_at(BOOTING) is None
    assert facts(node=ready_node(at(-4), created=at(-9))).registered_at(BOOTING) == NOW - timedelta(minutes=4)
    assert facts(node=ready_node(None, created=at(-9))).registered_at(BOOTING) == NOW - timedelta(minutes=9)
    assert facts(node=ready_node(None)).registered_at(BOOTING) == NOW


def test_last_power_off_is_the_latest_end_of_a_shutdown_that_succeeded():
    off = job("s-1", outcome="succeeded", ended=at(-10))
    failed = job("s-2", outcome="failed", ended=at(-3))  # no evidence the machine went off
    startup = job("c1-startup", "startup", outcome="succeeded", ended=at(-2))  # not a shutdown
    assert facts(jobs=[off, failed, startup]).last_power_off() == NOW - timedelta(minutes=10)
    assert facts(jobs=[failed, job("s-3")]).last_power_off() is None


def test_a_ready_from_before_the_last_power_off_joins_only_when_the_startup_job_succeeds():
    off = job("s-1", outcome="succeeded", ended=at(-5))
    stale = ready_node(at(-8))  # Ready since before the power-off: the machine's last words
    assert facts(jobs=[off], node=stale).registered_at(BOOTING) is None
    assert facts(jobs=[off, job("c1-startup", "startup")], node=stale).registered_at(BOOTING) is None
    failed = job("c1-startup", "startup", "failed", ended=at(-1))
    assert facts(jobs=[off, failed], node=stale).registered_at(BOOTING) is None
    done = job("c1-startup", "startup", "succeeded", ended=at(-1))
    assert facts(jobs=[off, done], node=stale).registered_at(BOOTING) == NOW - timedelta(minutes=1)  # the Job's end
    assert facts(jobs=[off], node=ready_node(at(-4))).registered_at(BOOTING) == NOW - timedelta(minutes=4)  # Ready again
    assert facts(jobs=[off], node=ready_node(at(-5))).registered_at(BOOTING) == NOW - timedelta(minutes=5)  # same moment
    failed_off = job("s-2", outcome="failed", ended=at(-5))
    assert facts(jobs=[failed_off], node=stale).registered_at(BOOTING) == NOW - timedelta(minutes=8)


def test_boot_view_fills_the_moments_the_cluster_records_and_leaves_the_claim_alone():
    claim = {"metadata": {"name": "c1"}, "spec": {"slotRef": "worker-01"}, "status": {"phase": "booting"}}
    f = facts(jobs=[job("c1-startup", "startup", "succeeded", ended=at(-6))], node=ready_node(at(-2)), claims=[claim])
    view = f.boot_view(claim)
    assert view["status"] == {"phase": "booting", "startupSucceededAt": at(-6), "registeredAt": at(-2)}
    assert view["spec"] == claim["spec"] and view["metadata"] == claim["metadata"]
    assert claim["status"] == {"phase": "booting"}  # the claim itself is not written to


def test_boot_view_keeps_what_the_claim_already_says():
    status = {"phase": "booting", "startupSucceededAt": at(-8), "registeredAt": at(-7)}
    claim = {"metadata": {"name": "c1"}, "status": dict(status)}
    f = facts(jobs=[job("c1-startup", "startup", "succeeded", ended=at(-6))], node=ready_node(at(-2)))
    assert f.boot_view(claim)["status"] == status


def test_boot_view_fills_nothing_from_a_startup_job_that_did_not_succeed_or_has_no_end():
    for startup in (job("c1-startup", "startup"), job("c1-startup", "startup", "failed", ended=at(-6)),
                    job("c1-startup", "startup", "succeeded")):
        view = facts(jobs=[startup]).boot_view({"metadata": {"name": "c1"}})
        assert view["status"] == {"phase": "pending"}, startup  # no phase yet reads as pending


def test_boot_view_registration_is_never_before_this_boot_started():
    # The Node went Ready before this boot started (an earlier boot's Ready): the machine joined for this
    # boot no earlier than the boot began.
    f = facts(node=ready_node(at(-20)))
    claim = {"metadata": {"name": "c1"}, "status": {"phase": "booting", "bootStartedAt": at(-5)}}
    assert f.boot_view(claim)["status"]["registeredAt"] == at(-5)
    later = {"metadata": {"name": "c1"}, "status": {"phase": "booting", "bootStartedAt": at(-30)}}
    assert f.boot_view(later)["status"]["registeredAt"] == at(-20)
    assert "registeredAt" not in facts(node=ready_node(at(-2), status="Unknown")).boot_view(claim)["status"]
