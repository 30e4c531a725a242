"""The slot's boot budget (issue 23, item 7): spec.bootCheck.timeout is how long the machine may take from the
power-on until its OS answers; the startup Job is given that plus a margin, the playbook's wait gets what the
power step left of it, and it must fit the claim's boot budget with the later stages of a boot."""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from homecluster.jobs import JobSpecError, startup_job
from homecluster.model.deadlines import (BOOT_JOB_MARGIN, boot_timeout, next_boot_check, startup_budget_refusal,
                                         startup_job_timeout)
from homecluster.model.phases import Reason
from homecluster.model.settings import Settings
from homecluster.model.timestamps import format_time

S = Settings()  # the defaults: startup_job_timeout 5m, boot floor 12m10s
T0 = datetime(2026, 3, 4, 9, 0, tzinfo=timezone.utc)
NS, IMAGE = "homecluster-system", "runner:test"


def slot(timeout: str | None = None) -> dict:
    check = {"port": 22} if timeout is None else {"port": 22, "timeout": timeout}
    return {"apiVersion": "infra.homecluster.dev/v2alpha1", "kind": "Node", "metadata": {"name": "big-01", "uid": "s"},
            "spec": {"groupRef": "pool-a", "bootCheck": check, "power": {"method": "ipmi", "ipmi": {
                "address": "10.0.0.1", "credentialsSecretRef": {"name": "bmc"}}}}}


def group(provision: str | None = None) -> dict:
    spec = {"maxSize": 3} if provision is None else {"maxSize": 3, "maxNodeProvisionTime": provision}
    return {"metadata": {"name": "pool-a", "uid": "g"}, "spec": spec}


def claim() -> dict:
    return {"metadata": {"name": "c1", "uid": "c"}, "spec": {"slotRef": "big-01"},
            "status": {"phase": "booting", "attempt": 1, "bootStartedAt": format_time(T0)}}


def job_vars(job: dict) -> dict:
    return json.loads(job["spec"]["template"]["metadata"]["annotations"]["infra.homecluster.dev/job-vars"])


def test_a_slot_with_a_long_boot_gets_a_startup_job_that_long():
    job = startup_job(claim(), slot("8m"), group("20m"), S, namespace=NS, image=IMAGE)
    assert job["spec"]["activeDeadlineSeconds"] == 8 * 60 + 60
    assert job_vars(job)["boot_budget"] == 8 * 60  # the power step and the wait; the wait gets what the step left


def test_without_a_slot_budget_the_job_keeps_the_setting():
    job = startup_job(claim(), slot(), group(), S, namespace=NS, image=IMAGE)
    assert job["spec"]["activeDeadlineSeconds"] == 300 and job_vars(job)["boot_budget"] == 240
    assert startup_job_timeout(slot(), S) == S.startup_job_timeout


def test_a_slot_budget_must_fit_the_claims_boot_budget():
    # the default claim budget is the floor (12m10s): it leaves the startup Job 5m, so the slot's budget 4m
    assert startup_budget_refusal(slot("4m"), group(), S) is None
    refused = startup_budget_refusal(slot("4m1s"), group(), S)
    assert refused is not None
    assert 'spec.bootCheck.timeout 4m1s' in refused and "maxNodeProvisionTime" in refused and "300 s" in refused
    with pytest.raises(JobSpecError, match="spec.bootCheck.timeout 9m does not fit"):
        startup_job(claim(), slot("9m"), group(), S, namespace=NS, image=IMAGE)
    assert startup_budget_refusal(slot("9m"), group("18m"), S) is None  # 18m - 7m10s of later stages = 10m50s >= 10m
    assert startup_budget_refusal(slot("9m"), group("17m"), S) is not None  # 9m50s < 10m


def test_the_startup_job_timed_out_clock_is_the_slots():
    limit = startup_job_timeout(slot("8m"), S)
    assert limit == timedelta(minutes=8) + BOOT_JOB_MARGIN
    assert boot_timeout(claim(), T0 + timedelta(minutes=6), S, limit) is None  # past the setting's 5m: not out
    assert boot_timeout(claim(), T0 + limit, S, limit) == Reason.STARTUP_JOB_TIMED_OUT
    assert next_boot_check(claim(), S, limit) == T0 + limit
    assert boot_timeout(claim(), T0 + timedelta(minutes=5), S) == Reason.STARTUP_JOB_TIMED_OUT  # no slot budget


def test_an_unreadable_slot_budget_is_refused_naming_the_field():
    with pytest.raises(JobSpecError, match=r'slot "big-01" spec.bootCheck.timeout'):
        startup_job(claim(), slot("soon"), group(), S, namespace=NS, image=IMAGE)
    assert startup_job_timeout(slot("soon"), S) == S.startup_job_timeout  # the monitor reads it as unset
