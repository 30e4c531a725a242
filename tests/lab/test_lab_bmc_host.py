"""The lab with its BMCs off 127.0.0.1 (LabCluster.bmc_host, which the lab with a real node sets to its bridge's
address): the whole boot still works, since every slot's spec.power and spec.bootCheck name that address.

In-memory API server, the operator, the process executor: an IPMI and a Redfish slot on 127.0.0.2 (loopback, as
the real node's 10.244.77.1 is the host's own), each claim's startup Job powers its machine through the BMC there
and waits for the OS on the boot port there; deleting the IPMI claim powers its machine off through the same BMC.
"""
from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from support import objects
from support.waits import until

from homecluster_lab.cluster import LabCluster, LabConfig
from homecluster_lab.operator_proc import unavailable_reason

pytestmark = pytest.mark.lab
HOST = "127.0.0.2"


class LabOffLoopback(LabCluster):
    bmc_host = HOST


def phase(lab: LabCluster, name: str) -> str | None:
    claim = next((c for c in lab.claims() if c["metadata"]["name"] == name), None)
    return None if claim is None else ((claim.get("status") or {}).get("phase") or "new")


async def test_claims_boot_and_release_machines_whose_bmcs_listen_off_127_0_0_1(tmp_path: Path):
    if unavailable_reason():
        pytest.skip(unavailable_reason())
    config = LabConfig(slots=2, driver="mixed", provider_address="127.0.0.1:0", workdir=tmp_path / "lab",
                       boot_seconds=0.5, ready_taints_clear_seconds=0.2, require_operator=True,
                       settings={"job_poll_interval": "1s"})
    async with LabOffLoopback(config) as lab:
        slots = {s["metadata"]["name"]: s["spec"] for s in lab.api.list("nodes.infra.homecluster.dev")}
        assert slots["worker-01"]["power"]["ipmi"]["address"] == HOST
        assert slots["worker-02"]["power"]["redfish"]["endpoint"].startswith(f"http://{HOST}:")
        assert {s["bootCheck"]["host"] for s in slots.values()} == {HOST}
        now = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
        stamp = lambda t: t.isoformat().replace("+00:00", "Z")  # noqa: E731
        for slot in ("worker-01", "worker-02"):
            await lab.api.create(objects.claim(f"boot-{slot}", slot, requested_at=stamp(now),
                                               deadline_at=stamp(now + dt.timedelta(minutes=20))))

        def settled() -> dict | None:
            phases = {slot: phase(lab, f"boot-{slot}") for slot in ("worker-01", "worker-02")}
            return phases if all(p in ("ready", "failed") for p in phases.values()) else None

        phases = await until(settled, "both claims to be ready or failed", 180, detail=lambda: str(lab.claims()))
        assert phases == {"worker-01": "ready", "worker-02": "ready"}, lab.claims()
        assert lab.machine("worker-01").power_state() == "on" and lab.machine("worker-02").power_state() == "on"

        await lab.api.delete("nodeclaims.infra.homecluster.dev", "boot-worker-01")
        await until(lambda: phase(lab, "boot-worker-01") is None and lab.machine("worker-01").power_state() == "off",
                    "the IPMI claim to be gone and its machine off", 180, detail=lambda: str(lab.claims()))
        assert lab.machine("worker-02").power_state() == "on"
