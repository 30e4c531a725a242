"""lifecycle.jobpods.pod_blocker: which pod states and Events mean a Job's pod will not start by itself; `look`,
the decision over what the pass read of a Job's pod (lifecycle.podsview).

The kubelet retries a failed mount and a missing env Secret, so only a failure that persisted for the
settle time blocks: a single FailedMount (a "failed to sync secret cache" hiccup, a Secret GitOps creates
seconds after the Job) does not.
"""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from homecluster.lifecycle.jobpods import Look, look, pod_blocker
from homecluster.lifecycle.podsview import JobPods, NotRead, PodsView
from homecluster.model.timestamps import format_time

CREATED = datetime(2026, 12, 1, 12, 0, 0, tzinfo=timezone.utc)
SETTLE = timedelta(seconds=30)
LATER = CREATED + timedelta(seconds=90)


def pod(name="c1-startup-abcde", phase="Pending", waiting=None, uid="u1"):
    status = {"phase": phase}
    if waiting:
        status["containerStatuses"] = [{"name": "ansible-runner", "state": {"waiting": waiting}}]
    return {"metadata": {"name": name, "uid": uid, "creationTimestamp": format_time(CREATED)}, "status": status}


def event(name="c1-startup-abcde", reason="FailedMount", type_="Warning", message="secret \"bmc\" not found",
          first=2, span=40, count=6, uid="u1"):
    return {"involvedObject": {"kind": "Pod", "name": name, "uid": uid}, "type": type_, "reason": reason,
            "message": message, "count": count,
            "firstTimestamp": format_time(CREATED + timedelta(seconds=first)),
            "lastTimestamp": format_time(CREATED + timedelta(seconds=first + span))}


def blocker(pods, events, now=LATER):
    return pod_blocker(pods, events, now, SETTLE)


def test_a_failed_mount_the_kubelet_kept_repeating_past_the_settle_time_blocks_the_pod():
    assert blocker([pod(waiting={"reason": "ContainerCreating"})], [event()]) == 'FailedMount: secret "bmc" not found'


def test_a_single_or_short_lived_failed_mount_is_a_passing_hiccup():
    waiting = {"reason": "ContainerCreating"}
    assert blocker([pod(waiting=waiting)], [event(count=1, span=0)]) is None  # once: "failed to sync secret cache"
    assert blocker([pod(waiting=waiting)], [event(count=3, span=5)]) is None  # the Secret appeared seconds later
    assert blocker([pod(waiting=waiting)], [event(count=1, span=60)]) is None  # not repeated


def test_an_event_of_an_earlier_pod_of_the_same_name_does_not_count():
    assert blocker([pod()], [event(first=-120)]) is None  # first seen before this pod existed
    assert blocker([pod()], [event(uid="an-older-pod")]) is None


def test_a_secret_named_in_the_environment_blocks_once_the_pod_is_old_enough():
    waiting = {"reason": "CreateContainerConfigError", "message": 'secret "bmc" not found'}
    assert blocker([pod(waiting=waiting)], [], now=CREATED + timedelta(seconds=5)) is None
    assert blocker([pod(waiting=waiting)], []) == 'CreateContainerConfigError: secret "bmc" not found'


def test_a_bad_image_name_blocks_at_once_and_a_create_container_error_never():
    assert blocker([pod(waiting={"reason": "InvalidImageName", "message": "bad"})], [], now=CREATED) == \
        "InvalidImageName: bad"
    assert blocker([pod(waiting={"reason": "CreateContainerError", "message": "x"})], []) is None


def test_what_may_still_start_is_not_a_blocker():
    assert blocker([pod(waiting={"reason": "ContainerCreating"})], []) is None
    assert blocker([pod()], [event(name="another-pod")]) is None
    assert blocker([pod()], [event(type_="Normal", reason="Scheduled")]) is None
    assert blocker([pod(phase="Running")], [event()]) is None
    assert blocker([], [event()]) is None


def test_untrusted_event_fields_are_read_safely():
    bad = event()
    bad["firstTimestamp"] = "yesterday"
    assert blocker([pod()], [bad]) is None
    bad = event()
    bad["count"] = "many"
    assert blocker([pod()], [bad]) is None


def test_a_long_message_is_cut():
    assert len(blocker([pod()], [event(message="x" * 5000)])) == 512


# Boundaries and the events.k8s.io shape (found by mutation testing, docs/reliability.md "Mutation testing")

def series_event(first=2, span=40, count=6):
    """A FailedMount as the events.k8s.io API shapes it: eventTime and series, no first/lastTimestamp."""
    return {"involvedObject": {"kind": "Pod", "name": "c1-startup-abcde", "uid": "u1"}, "type": "Warning",
            "reason": "FailedMount", "message": 'secret "bmc" not found',
            "eventTime": format_time(CREATED + timedelta(seconds=first)),
            "series": {"count": count, "lastObservedTime": format_time(CREATED + timedelta(seconds=first + span))}}


def test_a_failure_repeated_for_exactly_the_settle_time_twice_blocks():
    # the settle time is a minimum: count 2 over exactly `settle` is enough, one less of either is not
    assert blocker([pod()], [event(count=2, span=30)]) == 'FailedMount: secret "bmc" not found'
    assert blocker([pod()], [event(count=2, span=29)]) is None
    assert blocker([pod()], [event(count=1, span=30)]) is None
    assert blocker([pod()], [event(count=None, span=30)]) is None  # no count: seen once


def test_an_event_first_seen_the_second_the_pod_was_created_counts():
    assert blocker([pod()], [event(first=0)]) == 'FailedMount: secret "bmc" not found'
    assert blocker([pod()], [event(first=-1)]) is None


def test_an_events_api_failed_mount_with_a_series_blocks_like_a_core_one():
    assert blocker([pod()], [series_event()]) == 'FailedMount: secret "bmc" not found'
    assert blocker([pod()], [series_event(count=1)]) is None
    assert blocker([pod()], [series_event(span=10)]) is None


def test_a_pod_without_a_creation_time_or_an_event_without_times_is_not_judged_blocked():
    nameless = pod()
    del nameless["metadata"]["creationTimestamp"]
    assert blocker([nameless], [event()]) is None
    timeless = event()
    del timeless["lastTimestamp"]
    assert blocker([pod()], [timeless]) is None


def test_an_init_container_waiting_on_a_missing_secret_blocks_too():
    stuck = pod()
    stuck["status"]["initContainerStatuses"] = [
        {"name": "init", "state": {"waiting": {"reason": "CreateContainerConfigError", "message": "no key"}}}]
    assert blocker([stuck], []) == "CreateContainerConfigError: no key"
    both = pod(waiting={"reason": "InvalidImageName", "message": "bad"})
    both["status"]["initContainerStatuses"] = [{"name": "init", "state": {"running": {}}}]
    assert blocker([both], [], now=CREATED) == "InvalidImageName: bad"


def test_a_blocker_without_a_message_says_so():
    assert blocker([pod(waiting={"reason": "ErrImageNeverPull"})], [], now=CREATED) == \
        "ErrImageNeverPull: no message"
    assert blocker([pod()], [event(message=None)]) == "FailedMount: no message"


def test_a_long_message_keeps_its_beginning():
    said = blocker([pod()], [event(message="y" * 5000)])
    assert said == "FailedMount: " + "y" * (512 - len("FailedMount: "))


def test_a_waiting_state_that_is_not_an_object_is_ignored():
    odd = pod()
    odd["status"]["containerStatuses"] = [{"name": "ansible-runner", "state": {"waiting": "CreateContainerConfigError"}}]
    assert blocker([odd], []) is None


def test_a_started_pod_beside_a_blocked_one_does_not_hide_it():
    started = pod(name="c1-startup-old", phase="Running", uid="u0")
    assert blocker([started, pod(waiting={"reason": "InvalidImageName", "message": "bad"})], [], now=CREATED) == \
        "InvalidImageName: bad"


def test_a_missing_env_secret_blocks_from_exactly_the_settle_time():
    waiting = {"reason": "CreateContainerConfigError", "message": 'secret "bmc" not found'}
    assert blocker([pod(waiting=waiting)], [], now=CREATED + SETTLE) == \
        'CreateContainerConfigError: secret "bmc" not found'
    assert blocker([pod(waiting=waiting)], [], now=CREATED + SETTLE - timedelta(seconds=1)) is None


# --- look: the decision over what the pass read (lifecycle.podsview) ---------------------------------------------

def test_look_decides_from_what_was_read_and_says_when_to_look_again():
    blocked = pod(waiting={"reason": "ContainerCreating"})
    assert look(JobPods(), LATER, SETTLE) == Look()  # no pod yet: again
    assert look(JobPods(unread=True), LATER, SETTLE) == Look(again=False)  # started earlier, or unreadable
    assert look(JobPods(unread=True, retry=True), LATER, SETTLE) == Look()  # the read failed on its way: again
    assert look(JobPods((pod(phase="Running"),)), LATER, SETTLE) == Look(again=False)  # started: never again
    assert look(JobPods((blocked,), (event(),)), LATER, SETTLE) == Look(
        blocked=("c1-startup-abcde", 'FailedMount: secret "bmc" not found'))
    assert look(JobPods((blocked,)), LATER, SETTLE) == Look()  # pending, no Event yet: again


def test_pods_a_step_did_not_declare_are_never_read_as_none():
    job = {"metadata": {"name": "c1-startup", "namespace": "ns", "uid": "j1"}}
    with pytest.raises(NotRead):
        PodsView().of_job(job)
    with pytest.raises(NotRead):
        PodsView().shutdown_pods()
    assert PodsView(shutdown=()).shutdown_pods() == ()
