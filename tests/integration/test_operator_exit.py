"""The operator ends on SIGTERM with no task left for kopf to wait out.

kopf waits on the operator's stop flag in a task of its own; a signal stops the operator without setting the
flag, and kopf then gives every task still running 5 s before it cancels them ("Hung tasks are stopped" in its
debug log). Every pod termination, and every lab's teardown in this suite, paid those 5 s until the operator's
cleanup set the flag (operator/main.py). kopf's own debug line says which way the exit went, with no clock.
"""
from __future__ import annotations

import asyncio
import signal

from integration_pool import lab_settings

from homecluster_lab.cluster import LabCluster, LabConfig

NO_HUNG_TASKS = "Hung tasks stopping is skipped: no tasks given."
HUNG_TASKS_WAITED = "Hung tasks are stopped"


async def test_sigterm_leaves_no_task_for_kopf_to_wait_out(tmp_path) -> None:
    cfg = LabConfig(slots=1, driver="ipmi", boot_seconds=1.0, ready_taints_clear_seconds=0.5,
                    provider_address="127.0.0.1:0", workdir=tmp_path / "lab", settings=lab_settings(),
                    require_operator=True, operator_args=("--log-level", "debug"))
    async with LabCluster(cfg) as lab:
        operator = lab.operator
        assert operator is not None and operator.proc is not None
        operator.proc.send_signal(signal.SIGTERM)
        # a bound against a hang only: the exit's speed is judged by kopf's word below, not by a clock
        code = await asyncio.wait_for(operator.proc.wait(), 120)
        log = operator.log_path.read_text(errors="replace")
    assert code == 0, f"the operator exited {code} on SIGTERM\n{log[-3000:]}"
    assert HUNG_TASKS_WAITED not in log, f"kopf waited out a task the operator left running:\n{log[-3000:]}"
    assert NO_HUNG_TASKS in log, f"kopf's debug log does not say how its exit went:\n{log[-3000:]}"
