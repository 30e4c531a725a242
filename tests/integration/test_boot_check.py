"""The startup Job covers the boot: it ends once the machine answers on its slot's boot check port.

Settings scaled down: the registration wait is 4 s, a machine's OS takes 15 s to come up after the
power-on. worker-01 still reaches ready: its startup Job waited for the port (spec.bootCheck, a
listener the simulated machine opens only while its OS is up), so the registration wait covers only
the kubelet's join. worker-02 never boots: its port never opens, and the claim fails StartupJobFailed (the
playbook's boot wait ends before the Job's deadline; its pod's termination message says "did not answer
on host:port"), not RegistrationTimedOut nor StartupJobTimedOut. Before the boot check, both failed RegistrationTimedOut.
"""
from __future__ import annotations

import pytest
from integration_pool import Pool, jobs_of_claim, set_fault, short_lab_config
from support.lab_settings import job_timeout
from support.waits import until

from homecluster_lab.cluster import LabCluster
from homecluster.model.timestamps import parse_time

pytestmark = [pytest.mark.lab, pytest.mark.slow]
BOOT_SECONDS = 15.0  # far longer than the registration wait, and than what the playbook spends after the power-on
REGISTRATION_WAIT = "4s"
# ansible-runner reaches the power-on in 5-8 s on 2 quiet cores (longer when busy: short_lab_config stretches this
# by the load, as every Job timeout): the playbook's boot budget, half of the Job's (30 s quiet), leaves room for
# that plus the 15 s boot; a machine that never boots waits all of it. Set here because SHORT_SETTINGS' startup
# Job (25 s: a boot budget of 12.5 s on a quiet machine) is too short for this boot.
STARTUP_JOB_TIMEOUT = "60s"


@pytest.fixture
async def pool(tmp_path):
    cfg = short_lab_config(tmp_path, slots=2, registration_wait=REGISTRATION_WAIT,
                           startup_job_timeout=STARTUP_JOB_TIMEOUT)
    cfg.boot_seconds = BOOT_SECONDS
    async with LabCluster(cfg) as lab:
        yield Pool(lab)


async def test_a_slow_boot_reaches_ready_and_a_machine_that_never_boots_fails_its_startup_job(pool):
    await set_fault(pool, "worker-02", "never-boots")
    for slot in pool.lab.slot_names:
        spec = pool.api.get("nodes.infra.homecluster.dev", slot)["spec"]
        assert spec["bootCheck"]["port"] > 0  # the lab names the port its machine opens when up
    await pool.claim("slow", "worker-01")
    await pool.claim("dead", "worker-02")

    await pool.phase("slow", "ready", timeout=120)
    machine = pool.lab.machine("worker-01")
    [powered_on] = [e.at for e in machine.events if e.action == "on"]


    def startup_done():
        job = next((j for j in jobs_of_claim(pool, "slow") if j["metadata"]["name"] == "slow-startup"), None)
        return job if job is not None and (job.get("status") or {}).get("completionTime") else None

    startup = await until(startup_done, "the slow claim's startup Job to complete", 30)
    completed = parse_time(startup["status"]["completionTime"]).timestamp()
    assert completed >= powered_on + BOOT_SECONDS - 1, (completed - powered_on)  # the Job ended once the OS was up

    # bounded by its Job's deadline as the lab got it (stretched by the load at the lab's start, which may have
    # passed by now: this wait's own bound is scaled by the load now)
    failed = await pool.phase("dead", "failed", timeout=max(120.0, job_timeout(pool.lab.config.settings) + 30))
    # the playbook's power step and boot wait (extravars.boot_budget: 30 s of the Job's 60, both stretched by the
    # load) end before its deadline,
    # so the failure is the playbook's, not "active longer than specified deadline"
    assert failed["reason"] == "StartupJobFailed", failed
    assert "DeadlineExceeded" not in failed["message"], failed
    assert not failed.get("startupSucceededAt"), failed
    [pod] = [p for p in pool.api.list("pods", pool.lab.config.namespace)
             if p["metadata"].get("labels", {}).get("job-name") == "dead-startup"]
    [terminated] = [c["state"]["terminated"] for c in pod["status"]["containerStatuses"]]
    assert "did not answer on" in terminated.get("message", ""), terminated
