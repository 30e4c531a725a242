"""One live claim per slot: the newest owns it, the others end Superseded; terminal claims are ignored."""
import itertools

from hypothesis import given
from hypothesis import strategies as st

from support import objects
from homecluster.model.supersede import claims_for_slot, resolve_owner, slot_claim_view
from homecluster.model.phases import ClaimPhase


def claim(name, created, phase=None, slot="worker-01", finished=None, deleting=False):
    deletion = {"deletionTimestamp": "2026-03-04T10:00:00Z"} if deleting else {}
    return objects.claim(name, slot, phase, metadata={"creationTimestamp": created, **deletion},
                         **({} if finished is None else {"finishedAt": finished}))


def names(objs):
    return [o["metadata"]["name"] for o in objs]


def test_two_live_claims_newest_owns():
    old = claim("worker-01-aaaaa", "2026-03-04T09:00:00Z", "booting")
    new = claim("worker-01-zzzzz", "2026-03-04T09:00:05Z", None)
    for order in ([old, new], [new, old]):
        got = resolve_owner(order)
        assert got.owner is new
        assert names(got.superseded) == ["worker-01-aaaaa"]


def test_three_live_claims_the_two_older_are_superseded():
    a = claim("c", "2026-03-04T09:00:00Z", "ready")
    b = claim("a", "2026-03-04T09:00:01Z", "pending")
    c = claim("b", "2026-03-04T09:00:02Z", "booting")
    for order in itertools.permutations([a, b, c]):
        got = resolve_owner(order)
        assert got.owner is c
        assert names(got.superseded) == ["c", "a"]  # oldest first


def test_tie_on_creation_second_is_broken_by_name_greatest_wins():
    same = "2026-03-04T09:00:00Z"
    claims = [claim("worker-01-b", same, "pending"), claim("worker-01-c", same), claim("worker-01-a", same, "booting")]
    for order in itertools.permutations(claims):
        got = resolve_owner(order)
        assert got.owner["metadata"]["name"] == "worker-01-c"
        assert names(got.superseded) == ["worker-01-a", "worker-01-b"]


def test_terminal_claims_are_ignored():
    live = claim("old-live", "2026-03-04T09:00:00Z", "ready")
    newer_failed = claim("new-failed", "2026-03-04T09:30:00Z", "failed", finished="2026-03-04T09:31:00Z")
    newer_done = claim("new-done", "2026-03-04T09:40:00Z", "completed", finished="2026-03-04T09:41:00Z")
    got = resolve_owner([newer_failed, live, newer_done])
    assert got.owner is live and got.superseded == []
    assert resolve_owner([newer_failed, newer_done]).owner is None


def test_no_claims_is_a_free_slot():
    view = slot_claim_view([])
    assert (view.owner, view.superseded, view.last_terminal, view.deciding_phase) == (None, [], None, None)


def test_view_reads_the_most_recent_terminal_claim_when_nothing_is_live():
    early = claim("x-early", "2026-03-04T09:00:00Z", "completed", finished="2026-03-04T09:50:00Z")
    late = claim("x-late", "2026-03-04T08:00:00Z", "failed", finished="2026-03-04T09:55:00Z")
    view = slot_claim_view([late, early])
    assert view.owner is None and view.last_terminal is late
    assert view.deciding_phase == ClaimPhase.FAILED


def test_the_same_end_is_settled_by_creation_then_by_name():
    """Two terminal claims that finished in the same second: the later created is the last, then the greater name."""
    at = "2026-03-04T09:50:00Z"
    older = claim("x-z", "2026-03-04T08:00:00Z", "completed", finished=at)
    newer = claim("x-a", "2026-03-04T09:00:00Z", "failed", finished=at)
    assert slot_claim_view([newer, older]).last_terminal is newer
    assert slot_claim_view([older, newer]).last_terminal is newer
    low = claim("x-a", "2026-03-04T09:00:00Z", "completed", finished=at)
    high = claim("x-b", "2026-03-04T09:00:00Z", "failed", finished=at)
    assert slot_claim_view([high, low]).last_terminal is high
    assert slot_claim_view([low, high]).last_terminal is high


def test_view_prefers_the_live_owner_and_reports_its_deletion():
    done = claim("done", "2026-03-04T08:00:00Z", "completed", finished="2026-03-04T08:30:00Z")
    live = claim("live", "2026-03-04T09:00:00Z", "ready", deleting=True)
    view = slot_claim_view([done, live])
    assert view.owner is live and view.deciding_phase == ClaimPhase.READY and view.owner_deleting
    unstamped = slot_claim_view([claim("new", "2026-03-04T09:00:00Z")])
    assert unstamped.deciding_phase == ClaimPhase.PENDING and not unstamped.owner_deleting


def test_claims_for_slot_filters_by_slot_ref():
    mine = claim("a", "2026-03-04T09:00:00Z", slot="worker-01")
    other = claim("b", "2026-03-04T09:00:00Z", slot="worker-02")
    assert claims_for_slot([mine, other], "worker-01") == [mine]


live_phases = st.sampled_from([None, "", "pending", "booting", "ready", "failed", "completed"])


@given(st.lists(st.tuples(st.integers(0, 5), live_phases), min_size=0, max_size=8))
def test_exactly_one_owner_whenever_something_is_live(specs):
    claims = [claim(f"c{i:02d}", f"2026-03-04T09:00:0{sec}Z", ph) for i, (sec, ph) in enumerate(specs)]
    got = resolve_owner(claims)
    live = [c for c in claims if c.get("status", {}).get("phase") not in ("failed", "completed")]
    if not live:
        assert got.owner is None and got.superseded == []
        return
    assert len(got.superseded) == len(live) - 1
    assert {id(c) for c in [got.owner, *got.superseded]} == {id(c) for c in live}
    assert resolve_owner(list(reversed(claims))).owner is got.owner
