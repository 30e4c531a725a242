"""A claim made while its slot's unwanted-machine shutdown runs is not powered off by it (issue 11, item 1).

With the real operator, the real shutdown and startup playbooks and the simulated IPMI BMC: a person powers
worker-01 on through its BMC with ipmitool, nobody wants it (row 2), its shutdown Job starts (cordon, drain,
soft off). The machine's OS takes several seconds to shut down, so the Job is still running when a claim for
the slot is created. The claim must wait for that Job to end before its startup begins, reach ready, and the
machine must stay on and the claim ready for as long as a late power-off could still land (without the rule,
the Job's soft off landed after the claim was ready, and the claim ended MachineGone one boot window later).
"""
from __future__ import annotations

import asyncio
import dataclasses
import subprocess

import pytest
from integration_pool import Pool, settled_phase, short_lab_config
from support.waits import until

from homecluster import names
from homecluster.jobs import job_outcome, job_times
from homecluster_lab.cluster import LabCluster
from homecluster.model.settings import Settings
from homecluster.model.timestamps import parse_time

pytestmark = [pytest.mark.lab, pytest.mark.slow]
SLOT = "worker-01"
OS_SHUTDOWN_SECONDS = 8.0  # how long the simulated OS takes to power off after the BMC's soft off


@pytest.fixture
async def pool(tmp_path):
    # the Jobs' timeouts are SHORT_SETTINGS' stretched to the machine's load (this test is about order, not
    # speed), so the window watched below is computed from the lab's settings
    async with LabCluster(short_lab_config(tmp_path, slots=1)) as lab:
        yield Pool(lab)


def ipmitool_power_on(pool: Pool, slot: str) -> None:
    """Out of band, as a person would: `ipmitool chassis power on` against the slot's simulated BMC."""
    ep = pool.lab.fleet.endpoints[slot]
    result = subprocess.run(["ipmitool", "-I", "lanplus", "-H", ep.ipmi["address"], "-p", str(ep.ipmi["port"]),
                             "-U", ep.username, "-P", ep.password, "chassis", "power", "on"],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr


def job(pool: Pool, name: str) -> dict | None:
    return next((j for j in pool.jobs() if j["metadata"]["name"] == name), None)


async def test_a_claim_made_while_the_unwanted_shutdown_runs_is_not_powered_off(pool):
    await claim_during_the_unwanted_shutdown(pool)


async def claim_during_the_unwanted_shutdown(pool: Pool, slot: str = SLOT) -> None:
    """The scenario, on `slot`; the boot window the claim must survive is read from the lab's settings. Also
    run on the real control plane (tests/k8s/test_k8s_integration.py)."""
    shutdown = f"{slot}-unwanted-1"
    machine = pool.lab.machine(slot)
    machine.timing = dataclasses.replace(machine.timing, graceful_shutdown_seconds=OS_SHUTDOWN_SECONDS)
    await asyncio.to_thread(ipmitool_power_on, pool, slot)
    assert machine.power_state() == "on"
    await settled_phase(pool, slot, "draining", timeout=20)  # row 2: nobody wants it
    running = await until(lambda: job(pool, shutdown), f"the shutdown Job {shutdown}", 20)

    await pool.claim("c1", slot=slot)  # the drain made pods Pending: the autoscaler asks for this slot
    assert job_outcome(job(pool, shutdown)) == "running", "the shutdown Job ended before the claim was made"
    assert machine.power_state() == "on"

    status = await pool.phase("c1", "ready", timeout=150)
    ended = job_times(job(pool, shutdown)).finished_at
    assert ended is not None, "the claim went ready while the shutdown Job still ran"
    startup = job(pool, "c1-startup")
    assert parse_time(startup["metadata"]["creationTimestamp"]) >= ended, \
        f"the startup Job was created before the shutdown Job {running['metadata']['name']} ended at {ended}"
    assert parse_time(status["bootStartedAt"]) >= ended

    # the shutdown Job ended before the startup began, so no power-off of its can come any more; watched
    # for a while all the same, every 0.2 s: a soft off sent just before the Job ended would take the OS
    # OS_SHUTDOWN_SECONDS to land, a held-off retry (the wrong rule) would fire after the hold-off, and
    # one poll later the operator would see it. The machine stays on and the claim ready all along.
    settings = Settings.from_mapping(pool.lab.config.settings)
    window = OS_SHUTDOWN_SECONDS + settings.shutdown_holdoff.total_seconds() + settings.job_poll_interval.total_seconds()
    watched_until = asyncio.get_running_loop().time() + window
    while asyncio.get_running_loop().time() < watched_until:
        assert machine.power_state() == "on", "the machine went off after its claim was ready"
        status = pool.status("c1")
        assert status["phase"] == "ready" and "machineObservedOffAt" not in status, status
        await asyncio.sleep(0.2)
    assert [j["metadata"]["name"] for j in pool.jobs() if j["metadata"]["labels"].get(names.LABEL_SLOT) == slot
            and j["metadata"]["labels"].get(names.LABEL_JOB_KIND) == "shutdown"] == [shutdown]
