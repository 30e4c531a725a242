"""Two operators on the real control plane, the leader SIGKILLed mid-boot (issue 23 item 12).

The scenario of tests/integration/two_operators.py on a RealLabCluster: both operators run as the
`homecluster-controller` ServiceAccount through config/rbac (so the Lease grants are the real authorizer's),
the lifecycle Jobs' pods run on the runner node. Operator B takes the Lease within the lease duration of
operator A's SIGKILL, the claim reaches ready and is shut down, with one startup Job (and, until issue 23
item 3 is fixed, possibly a second shutdown attempt: two_operators.py).
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
from k8s_pool import real_pool

from homecluster_lab.config import LabConfig
from homecluster_lab.operator_proc import unavailable_reason

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS / "integration"))
from integration_pool import SHORT_SETTINGS  # noqa: E402
from two_operators import OPERATOR_A, leader_killed_mid_boot  # noqa: E402

pytestmark = pytest.mark.asyncio(loop_scope="module")
# as test_k8s_integration: the waits' bounds (not the takeover's) times 8 on the loaded real control plane,
# and Job timeouts ansible-runner fits in
BOUND_SCALE = 8.0
REAL_ROOM = {"startup_job_timeout": "180s", "shutdown_job_timeout": "180s"}


async def test_the_standby_takes_over_within_the_lease_on_the_real_control_plane(tmp_path_factory) -> None:
    if unavailable_reason():
        pytest.skip(unavailable_reason())
    workdir = tmp_path_factory.mktemp("two-operators")
    config = LabConfig(slots=1, driver="ipmi", boot_seconds=1.0, ready_taints_clear_seconds=0.5,
                       provider_address="127.0.0.1:0", workdir=workdir, settings={**SHORT_SETTINGS, **REAL_ROOM},
                       require_operator=True, control_plane="kubernetes", ready_timeout=180,
                       operator_args=OPERATOR_A)
    async with real_pool(config, BOUND_SCALE) as (_, pool):
        measured = await leader_killed_mid_boot(pool, workdir)
    print(f"real control plane: takeover {measured['takeover_seconds']:.2f}s after the SIGKILL; {measured['jobs']}")
