"""The campaign's invariant checkers on hand-made logs: a clean lifecycle passes, and each rule broken once is
caught (the proof that the checkers can fail; the campaign itself only ever shows them passing)."""
from __future__ import annotations

from chaos_invariants import (CLAIM_ATTEMPT, CLAIM_CREATED, CLAIM_DELETING, CLAIM_GONE, CLAIM_PHASE, JOB_CREATED,
                              JOB_ENDED, OPERATOR_EXIT, POWER_OFF, POWER_ON, SLOT_SPEC_WRITE, Event, check_all,
                              check_claims_end, check_no_power_off_under_live_claim, check_one_job_and_one_live_claim,
                              check_operator_alive, check_power_on_needs_claim, check_writes, held_by_load,
                              not_converged)

S = "worker-01"


def boot(claim: str = "c1", t0: float = 100.0, slot: str = S, deadline: float | None = 200.0) -> list[Event]:
    """A claim's clean life: created, seeded, startup Job, power-on, booting, ready."""
    return [Event(t0, CLAIM_CREATED, slot, claim, "" if deadline is None else str(deadline)),
            Event(t0 + 1, CLAIM_PHASE, slot, claim, "pending"), Event(t0 + 1, CLAIM_ATTEMPT, slot, claim, "1"),
            Event(t0 + 2, JOB_CREATED, slot, claim, "startup"), Event(t0 + 3, CLAIM_PHASE, slot, claim, "booting"),
            Event(t0 + 5, POWER_ON, slot, "", "ipmi"), Event(t0 + 9, JOB_ENDED, slot, claim, "startup"),
            Event(t0 + 12, CLAIM_PHASE, slot, claim, "ready")]


def release(claim: str = "c1", t0: float = 150.0, slot: str = S) -> list[Event]:
    """Deleted while ready: shutdown Job, power-off, completed, gone."""
    return [Event(t0, CLAIM_DELETING, slot, claim), Event(t0 + 1, JOB_CREATED, slot, claim, "shutdown"),
            Event(t0 + 4, POWER_OFF, slot, "", "ipmi"), Event(t0 + 5, JOB_ENDED, slot, claim, "shutdown"),
            Event(t0 + 6, CLAIM_PHASE, slot, claim, "completed"), Event(t0 + 7, CLAIM_GONE, slot, claim)]


CLEAN = boot() + release() + boot("c2", 170.0, deadline=260.0)


def test_a_clean_history_breaks_nothing():
    assert check_all(CLEAN, end=400.0, slack=20.0, release_bound=10.0) == []


def test_power_on_without_a_claim_is_caught():
    found = check_power_on_needs_claim(sorted(CLEAN + [Event(160.0, POWER_ON, "worker-02", "", "redfish")],
                                              key=lambda e: e.t))
    assert [(v.invariant, v.t) for v in found] == [(1, 160.0)] and "worker-02" in found[0].message


def test_power_on_from_a_job_whose_claim_was_already_deleted_is_caught():
    log = boot() + [Event(101.5, CLAIM_DELETING, S, "c1")]  # deleted while pending, the Job launched anyway
    found = check_power_on_needs_claim(sorted(log, key=lambda e: e.t))
    assert [v.invariant for v in found] == [1]


def test_power_on_long_after_the_startup_job_ended_is_caught():
    log = boot() + [Event(140.0, POWER_ON, S, "", "ipmi")]
    assert [v.t for v in check_power_on_needs_claim(sorted(log, key=lambda e: e.t))] == [140.0]


def test_power_off_under_a_live_booting_claim_is_caught():
    log = boot() + [Event(106.0, POWER_OFF, S, "", "ipmi")]  # a leftover shutdown lands during c1's boot
    found = check_no_power_off_under_live_claim(sorted(log, key=lambda e: e.t))
    assert [(v.invariant, v.t) for v in found] == [(2, 106.0)] and "c1" in found[0].message


def test_power_off_after_the_claim_failed_is_allowed():
    log = boot() + [Event(130.0, CLAIM_PHASE, S, "c1", "failed"), Event(131.0, POWER_OFF, S, "", "ipmi")]
    assert check_no_power_off_under_live_claim(sorted(log, key=lambda e: e.t)) == []


def test_two_startup_jobs_for_one_claim_are_caught():
    log = boot() + [Event(104.0, JOB_CREATED, S, "c1", "startup")]
    found = check_one_job_and_one_live_claim(sorted(log, key=lambda e: e.t))
    assert [v.invariant for v in found] == [3] and "2 startup Jobs" in found[0].message


def test_two_committed_live_claims_on_one_slot_are_caught():
    log = boot() + boot("c2", 110.0, deadline=300.0)  # c1 is ready and live when c2 starts booting
    found = check_one_job_and_one_live_claim(sorted(log, key=lambda e: e.t))
    assert [v.invariant for v in found] == [3] and "c1 and c2" in found[0].message


def test_a_spec_write_and_a_changed_attempt_are_caught():
    log = CLEAN + [Event(120.0, SLOT_SPEC_WRITE, S, "", "homecluster-operator"),
                   Event(125.0, CLAIM_ATTEMPT, S, "c1", "2")]
    found = check_writes(sorted(log, key=lambda e: e.t))
    assert [(v.invariant, v.t) for v in found] == [(4, 120.0), (4, 125.0)]
    assert check_writes(sorted(CLEAN + [Event(125.0, CLAIM_ATTEMPT, S, "c1", "1")], key=lambda e: e.t)) == []


def test_a_claim_past_its_deadline_is_caught_and_one_not_yet_due_is_not():
    stuck = [Event(100.0, CLAIM_CREATED, S, "c1", "150"), Event(101.0, CLAIM_PHASE, S, "c1", "pending")]
    assert check_claims_end(stuck, end=160.0, slack=20.0, release_bound=10.0) == []
    found = check_claims_end(stuck, end=171.0, slack=20.0, release_bound=10.0)
    assert [(v.invariant, v.t) for v in found] == [(5, 170.0)]
    late = stuck + [Event(175.0, CLAIM_PHASE, S, "c1", "failed")]
    assert [v.invariant for v in check_claims_end(late, end=400.0, slack=20.0, release_bound=10.0)] == [5]


def test_a_claim_stuck_terminating_is_caught():
    log = boot() + [Event(150.0, CLAIM_PHASE, S, "c1", "failed"), Event(151.0, CLAIM_DELETING, S, "c1")]
    found = check_claims_end(sorted(log, key=lambda e: e.t), end=170.0, slack=20.0, release_bound=10.0)
    assert [(v.invariant, v.t) for v in found] == [(5, 161.0)] and "Terminating" in found[0].message
    gone = log + [Event(155.0, CLAIM_GONE, S, "c1")]
    assert check_claims_end(sorted(gone, key=lambda e: e.t), end=170.0, slack=20.0, release_bound=10.0) == []


def test_a_deleted_ready_claim_is_judged_from_its_completion():
    log = boot() + [Event(150.0, CLAIM_DELETING, S, "c1"), Event(180.0, CLAIM_PHASE, S, "c1", "completed")]
    assert check_claims_end(sorted(log, key=lambda e: e.t), end=189.0, slack=20.0, release_bound=10.0) == []
    assert len(check_claims_end(sorted(log, key=lambda e: e.t), end=191.0, slack=20.0, release_bound=10.0)) == 1


def test_an_operator_exit_is_caught():
    assert [v.invariant for v in check_operator_alive([Event(1.0, OPERATOR_EXIT, value="1")])] == [7]


def _claim(name: str, slot: str, phase: str, deleting: bool = False) -> dict:
    md = {"name": name, **({"deletionTimestamp": "2026-01-01T00:00:00Z"} if deleting else {})}
    return {"metadata": md, "spec": {"slotRef": slot}, "status": {"phase": phase}}


def test_convergence():
    assert not_converged([_claim("a", "w1", "ready"), _claim("b", "w2", "failed")], {"w1": "on", "w2": "off"}) == []
    assert not_converged([_claim("b", "w2", "failed")], {"w2": "on"}) == ["slot w2: machine on, no ready live claim"]
    assert not_converged([_claim("a", "w1", "ready")], {"w1": "off"}) == ["slot w1: machine off, a ready live claim"]
    assert not_converged([_claim("a", "w1", "booting")], {"w1": "off"}) == ["claim a is still booting"]
    assert not_converged([_claim("a", "w1", "completed", deleting=True)], {"w1": "off"}) == [
        "claim a is Terminating"]


def test_a_pool_held_up_only_by_jobs_timing_out_is_load_and_otherwise_not():
    reasons = ["slot worker-01: machine on, no ready live claim", "claim c1 is Terminating"]
    assert held_by_load(reasons, CLEAN, [(310.0, "worker-01")], since=300.0)
    assert not held_by_load(reasons, CLEAN, [(290.0, "worker-01")], since=300.0)  # before the faults stopped
    assert not held_by_load(reasons + ["slot worker-02: machine on, no ready live claim"], CLEAN,
                            [(310.0, "worker-01")], since=300.0)  # worker-02: nothing tried
    assert not held_by_load(["claim x is still pending"], CLEAN, [(310.0, "worker-01")], since=300.0)


def test_a_deleted_failed_claim_waits_for_its_shutdown_job_before_it_is_judged():
    """Seed 2006 of the long campaign: a failed claim deleted while the forced shutdown Job it owns ran (70 s
    on a loaded machine) was released when that Job ended; the first checker called that Terminating too long."""
    log = boot() + [Event(120.0, CLAIM_PHASE, S, "c1", "failed"), Event(120.0, JOB_CREATED, S, "c1", "shutdown"),
                    Event(125.0, CLAIM_DELETING, S, "c1"), Event(190.0, JOB_ENDED, S, "c1", "shutdown"),
                    Event(191.0, CLAIM_GONE, S, "c1")]
    assert check_claims_end(sorted(log, key=lambda e: e.t), end=400.0, slack=20.0, release_bound=10.0) == []
    stuck = [e for e in log if e.kind != CLAIM_GONE]
    found = check_claims_end(sorted(stuck, key=lambda e: e.t), end=201.0, slack=20.0, release_bound=10.0)
    assert [(v.invariant, v.t) for v in found] == [(5, 200.0)]
    running = [e for e in stuck if e.kind != JOB_ENDED]  # its Job still runs: judged by convergence instead
    assert check_claims_end(sorted(running, key=lambda e: e.t), end=400.0, slack=20.0, release_bound=10.0) == []


def test_a_kept_record_reads_back_as_the_same_events():
    from chaos_record import read_record, record_line
    text = "seed 1\nschedule:\n  1.00s drop-watches\nrecord:\n" + "".join(record_line(e) for e in CLEAN) + \
        "machine worker-01:\n  100.000 on ipmi\n"
    assert read_record(text) == [Event(round(e.t, 3), e.kind, e.slot, e.claim, e.value) for e in CLEAN]
