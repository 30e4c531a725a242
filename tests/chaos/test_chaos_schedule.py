"""The campaign's schedule is a function of its seed (a failing run's seed replays it) and draws every kind."""
from __future__ import annotations

from chaos_schedule import OWN_STREAM, WEIGHTS, describe, make_schedule

SLOTS = ["worker-01", "worker-02", "worker-03"]


def test_a_seed_replays_its_schedule():
    assert describe(make_schedule(7, 60, SLOTS)) == describe(make_schedule(7, 60, SLOTS))
    assert describe(make_schedule(7, 60, SLOTS)) != describe(make_schedule(8, 60, SLOTS))


def test_schedules_stay_in_their_window_and_draw_every_kind():
    kinds = set()
    for seed in range(30):
        schedule = make_schedule(seed, 60, SLOTS)
        assert all(0 < a.at < 60 for a in schedule)
        assert [a.at for a in schedule] == sorted(a.at for a in schedule)
        assert all(a.arg("slot", SLOTS[0]) in SLOTS for a in schedule)
        kinds |= {a.kind for a in schedule}
    assert kinds == set(WEIGHTS) | set(OWN_STREAM)
