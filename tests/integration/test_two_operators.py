"""Two operators, the leader SIGKILLed mid-boot, on the in-memory lab (the scenario: two_operators.py)."""
from __future__ import annotations

from integration_pool import Pool, short_lab_config
from two_operators import OPERATOR_A, leader_killed_mid_boot

from homecluster_lab.cluster import LabCluster
from homecluster_lab.operator_proc import unavailable_reason

import pytest


async def test_the_standby_takes_over_within_the_lease_and_nothing_is_done_twice(tmp_path):
    if unavailable_reason():
        pytest.skip(unavailable_reason())
    config = short_lab_config(tmp_path, slots=1)  # Job timeouts stretched to the machine's load
    config.operator_args = OPERATOR_A
    async with LabCluster(config) as lab:
        measured = await leader_killed_mid_boot(Pool(lab), tmp_path)
    print(f"takeover {measured['takeover_seconds']:.2f}s after the SIGKILL; Jobs {measured['jobs']}")
