"""kube_cordon.decide: the patch for every (state, cordoned, marked) combination (pure)."""
from __future__ import annotations

import pytest

from ansible_collections.homecluster.infra.plugins.module_utils.kube_cordon import (
    ANNOTATION_CORDONED_BY, CORDONED_BY_VALUE, decide,
)

MARK = {ANNOTATION_CORDONED_BY: CORDONED_BY_VALUE}


def test_mark_matches_the_shared_names():
    names = pytest.importorskip("homecluster.names")
    assert (ANNOTATION_CORDONED_BY, CORDONED_BY_VALUE) == (names.ANNOTATION_CORDONED_BY, names.CORDONED_BY_VALUE)


def test_cordon_with_mark():
    d = decide("cordoned", False, {}, mark=True, only_if_marked=False)
    assert d["patch"] == {"spec": {"unschedulable": True}, "metadata": {"annotations": MARK}}


def test_cordon_without_mark():
    assert decide("cordoned", False, None, mark=False, only_if_marked=False)["patch"] == {"spec": {"unschedulable": True}}


def test_cordon_of_a_cordoned_node_changes_nothing_and_does_not_claim_it():
    d = decide("cordoned", True, {}, mark=True, only_if_marked=False)
    assert d["patch"] is None and not d["refused"]


def test_uncordon_of_our_cordon_lifts_it_and_the_mark():
    d = decide("uncordoned", True, MARK, mark=False, only_if_marked=True)
    assert d["patch"] == {"spec": {"unschedulable": False}, "metadata": {"annotations": {ANNOTATION_CORDONED_BY: None}}}


def test_uncordon_of_someone_elses_cordon_is_refused_when_asked():
    d = decide("uncordoned", True, {"other": "x"}, mark=False, only_if_marked=True)
    assert d["patch"] is None and d["refused"] and "someone else" in d["message"]


def test_uncordon_without_only_if_marked_lifts_any_cordon():
    d = decide("uncordoned", True, {}, mark=False, only_if_marked=False)
    assert d["patch"] == {"spec": {"unschedulable": False}}


def test_schedulable_node_with_stale_mark_is_cleaned():
    d = decide("uncordoned", False, MARK, mark=False, only_if_marked=True)
    assert d["patch"] == {"metadata": {"annotations": {ANNOTATION_CORDONED_BY: None}}}


def test_schedulable_node_is_left_alone():
    assert decide("uncordoned", False, {}, mark=False, only_if_marked=True)["patch"] is None
