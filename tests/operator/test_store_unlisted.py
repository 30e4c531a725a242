"""A list of a kind drops what it shows gone, and only that (issue 23, chaos seeds 7000 and 7018).

kube.store.forget_unlisted, which the controller's poll calls for every kind and a refused write for one name:
an object whose DELETED event fell between two watch streams is dropped; one newer than the list is kept;
nothing from before the list brings it back. The whole findings, through the real controller:
tests/lifecycle/reversal/test_job_gone_unseen.py and tests/operator/test_poll_unseen_deletions.py.
"""
from __future__ import annotations

from homecluster.kube.store import CLAIMS, JOBS, Store


def _stored(name: str, rv: str) -> dict:
    return {"metadata": {"name": name, "resourceVersion": rv, "labels": {"infra.homecluster.dev/slot": "worker-01"}}}


def test_a_list_drops_only_the_jobs_it_shows_gone_and_none_comes_back_from_before_it():
    store = Store()
    for name, rv in (("gone", "5"), ("listed", "6"), ("created-since", "12")):
        store.apply(JOBS, _stored(name, rv))
    assert [j["metadata"]["name"] for j in store.forget_unlisted(JOBS, ["listed"], "10")] == ["gone"]
    assert store.job("gone") is None
    assert store.job("listed") and store.job("created-since")  # newer than the list: stored by our own write
    assert not store.apply(JOBS, _stored("gone", "9"))  # an event from before the list does not bring it back
    assert store.apply(JOBS, _stored("gone", "11"))  # a Job of that name created after the list is another one
    assert store.forget_unlisted(JOBS, [], "not-a-number") == []  # nothing can be compared: nothing is dropped


def _claim(name: str, rv: str) -> dict:
    return {"metadata": {"name": name, "resourceVersion": rv}, "spec": {"slotRef": "worker-01"}}


def test_a_claim_list_drops_the_claims_it_shows_gone_from_the_shared_cache():
    store = Store()
    for name, rv in (("gone", "5"), ("listed", "6"), ("created-since", "12")):
        store.apply(CLAIMS, _claim(name, rv))
    assert [c["metadata"]["name"] for c in store.forget_unlisted(CLAIMS, ["listed"], "10")] == ["gone"]
    assert store.claim("gone") is None and store.cache.get(CLAIMS, "gone") is None  # the provider's view too
    assert store.claim("listed") and store.claim("created-since")
    assert store.claims_of_slot("worker-01") and "gone" not in [c["metadata"]["name"]
                                                               for c in store.claims_of_slot("worker-01")]
    assert not store.apply(CLAIMS, _claim("gone", "9"))


def test_a_list_of_one_name_drops_only_that_name():
    """A refused write reads its object again by a field selector: the others are not in that list."""
    store = Store()
    store.apply(CLAIMS, _claim("asked", "5"))
    store.apply(CLAIMS, _claim("other", "6"))
    assert [c["metadata"]["name"] for c in store.forget_unlisted(CLAIMS, [], "10", among=["asked"])] == ["asked"]
    assert store.claim("other") is not None


def test_the_store_holds_an_event_at_or_before_its_copy_and_nothing_else():
    """Store.holds lets an event the store already has skip the slot lookup (Controller.ingest): it must say
    True exactly when apply would ignore the event, or a new copy is dropped unseen."""
    store = Store()
    store.apply(CLAIMS, _claim("c1", "7"))
    store.apply(JOBS, _stored("j1", "7"))
    for kind, name in ((CLAIMS, "c1"), (JOBS, "j1")):
        make = _claim if kind == CLAIMS else _stored
        assert store.holds(kind, make(name, "7")) and store.holds(kind, make(name, "6"))
        assert not store.holds(kind, make(name, "8"))  # newer: news
        assert not store.holds(kind, make("other", "5"))  # another name: news
        assert not store.holds(kind, {"metadata": {"name": name}})  # no resourceVersion: never ignored
        assert store.apply(kind, make(name, "8")) and store.holds(kind, make(name, "8"))
