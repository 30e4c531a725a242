"""A list of the Jobs drops the ones it shows gone, and only those (issue 23, chaos seed 7000).

kube.store.forget_unlisted_jobs, which the controller's Job monitor poll calls: a Job whose DELETED event fell
between two watch streams is dropped; one newer than the list is kept; nothing from before the list brings it
back. The whole finding, through the real controller: tests/lifecycle/reversal/test_job_gone_unseen.py.
"""
from __future__ import annotations

from homecluster.kube.store import JOBS, Store


def _stored(name: str, rv: str) -> dict:
    return {"metadata": {"name": name, "resourceVersion": rv, "labels": {"infra.homecluster.dev/slot": "worker-01"}}}


def test_a_list_drops_only_the_jobs_it_shows_gone_and_none_comes_back_from_before_it():
    store = Store()
    for name, rv in (("gone", "5"), ("listed", "6"), ("created-since", "12")):
        store.apply(JOBS, _stored(name, rv))
    assert [j["metadata"]["name"] for j in store.forget_unlisted_jobs(["listed"], "10")] == ["gone"]
    assert store.job("gone") is None
    assert store.job("listed") and store.job("created-since")  # newer than the list: stored by our own write
    assert not store.apply(JOBS, _stored("gone", "9"))  # an event from before the list does not bring it back
    assert store.apply(JOBS, _stored("gone", "11"))  # a Job of that name created after the list is another one
    assert store.forget_unlisted_jobs([], "not-a-number") == []  # nothing can be compared: nothing is dropped
