"""Which machines are on right now, through the operator's real /metrics: the per-slot gauges and build_info.

The real operator (`homecluster run` as a subprocess) serves /metrics on 127.0.0.1:<free port>; the test
scrapes it over HTTP and parses it with prometheus_client's parser, as Prometheus would. A claim powers
worker-01 on: its gauges must follow the slot's status (the operator's observation), worker-02 stays off.
"""
from __future__ import annotations

import contextlib
from importlib.metadata import version

import aiohttp
import pytest
from integration_pool import Pool, lab_settings
from support.waits import until
from prometheus_client.parser import text_string_to_metric_families

from homecluster_lab.cluster import LabCluster, LabConfig, free_port

pytestmark = [pytest.mark.lab]


async def scrape(url: str) -> dict[tuple[str, tuple], float]:
    async with aiohttp.ClientSession() as session:
        async with session.get(url, timeout=aiohttp.ClientTimeout(total=5)) as resp:
            assert resp.status == 200
            text = await resp.text()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def slot_view(samples, slot: str) -> tuple[float | None, list[str]]:
    """(homecluster_slot_powered_on, the phases whose state-set series is 1) of one slot."""
    power = next((v for (n, labels), v in samples.items()
                  if n == "homecluster_slot_powered_on" and dict(labels)["slot"] == slot), None)
    phases = [dict(labels)["phase"] for (n, labels), v in samples.items()
              if n == "homecluster_slot_phase" and dict(labels)["slot"] == slot and v == 1]
    return power, phases


async def test_slot_power_and_phase_by_slot_and_group(tmp_path):
    address = f"127.0.0.1:{free_port('127.0.0.1')}"
    url = f"http://{address}/metrics"
    cfg = LabConfig(slots=2, driver="ipmi", boot_seconds=1.0, ready_taints_clear_seconds=0.5,
                    provider_address="127.0.0.1:0", workdir=tmp_path / "lab", settings=lab_settings(),
                    require_operator=True, operator_args=("--metrics-address", address))
    async with contextlib.AsyncExitStack() as stack:
        pool = Pool(await stack.enter_async_context(LabCluster(cfg)))
        group = pool.api.get("nodes.infra.homecluster.dev", "worker-01")["spec"]["groupRef"]

        samples = await scrape(url)
        assert samples[("homecluster_build_info", (("version", version("homecluster")),))] == 1
        # every phase is a series of each slot (a state set), labelled with the slot's group
        phase_series = {dict(labels)["phase"] for (n, labels), _ in samples.items()
                        if n == "homecluster_slot_phase" and dict(labels).get("slot") == "worker-01"
                        and dict(labels)["group"] == group}
        assert phase_series == {"off", "pending", "booting", "ready", "draining"}

        async def seen(slot: str, power: float, phase: str) -> None:
            last = {}

            async def check():
                last["view"] = slot_view(await scrape(url), slot)
                return last["view"] == (power, [phase])
            await until(check, lambda: f"{slot} at {(power, phase)}: scraped {last.get('view')}, "
                               f"status {pool.slot_status(slot)}", 60, interval=0.2)

        await seen("worker-01", 0, "off")
        await pool.claim("c1")
        await pool.phase("c1", "ready", timeout=60)
        await seen("worker-01", 1, "ready")
        await seen("worker-02", 0, "off")

