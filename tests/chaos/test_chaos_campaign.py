"""The short fault campaign inside `make test` (issue 14): two seeded runs of the whole lab -- the real operator
process, the real playbooks as Jobs, simulated machines on their real protocols -- under random faults, with
every invariant of chaos_invariants.py checked over what was recorded, and the pool's convergence once the
faults stop. A failure prints the seed and the schedule; `benchmarks/chaos.py --runs 1 --seed S` replays it.
Long campaigns and their figures: benchmarks/chaos.py, docs/reliability.md."""
from __future__ import annotations

import pytest
from chaos_driver import run_campaign
from chaos_groups import SPARE_SLOT
from chaos_invariants import CLAIM_CREATED, JOB_CREATED, POWER_ON
from chaos_schedule import describe

pytestmark = [pytest.mark.lab, pytest.mark.slow]

# seeds 3 and 18 draw 8 and 14 actions, of 12 kinds between them: 18's include our webhooks down (timing out)
# while IncreaseSize asks for claims, and a second Group added, used through IncreaseSize and removed
FAULT_SECONDS = 18.0


@pytest.mark.parametrize("seed", [3, 18])
async def test_campaign_breaks_no_invariant_and_converges(seed, tmp_path):
    report = await run_campaign(seed, FAULT_SECONDS, tmp_path / "lab", converge_timeout=180.0)
    print(report.summary())
    assert sum(report.done.values()) >= 5, f"seed {seed}: the schedule carried out too little:\n{report.summary()}"
    drawn = {a.kind for a in report.schedule} & {"webhook-down", "group-add"}
    assert all(report.done[kind] for kind in drawn), f"seed {seed}: a new kind was never carried out:\n{report.summary()}"
    if "group-add" in drawn:
        # seed 18 adds the Group at 13.1 s, after the webhooks are back (0.95 s + 4.3 s): the add must get its
        # Group created and its machine asked for, and a claim on the spare slot must be recorded -- counting
        # the spawned action alone would pass with every step of the add refused
        asked = [a for a in report.group_adds if a.group and a.slot and a.asked]
        assert asked, f"seed {seed}: no group-add got its Group created and its machine asked for: " \
                      f"{report.group_adds}\n{report.summary()}"
        spare = [e for e in report.events if e.kind == CLAIM_CREATED and e.slot == SPARE_SLOT]
        assert spare, f"seed {seed}: no claim on {SPARE_SLOT} was recorded:\n{report.summary()}"
    # a pool that did not converge only because lifecycle Jobs kept running out of their deadline is load on
    # this machine, not a broken rule (chaos_invariants.held_by_load); the run says so in its summary
    assert report.ok and (report.converged_after is not None or report.load_limited), (
        f"seed {seed} broke the model (replay: benchmarks/chaos.py --runs 1 --seed {seed} --minutes "
        f"{FAULT_SECONDS / 60:g}):\n{report.summary()}\nschedule:\n{describe(report.schedule)}")
    assert report.rss_kib and max(report.rss_kib) < 1024 * 1024, "the operator's RSS passed 1 GiB"
    # the record saw what happened (a recorder that missed it would make every check above pass): each claim
    # ready at the end had its creation, a startup Job and a power-on at its BMC recorded
    ready = report.phases.get("ready", 0)
    kinds = [e.kind for e in report.events]
    assert kinds.count(CLAIM_CREATED) >= ready and kinds.count(JOB_CREATED) >= ready, report.summary()
    assert kinds.count(POWER_ON) >= ready, f"{ready} ready claims, power-ons recorded: {kinds.count(POWER_ON)}"
