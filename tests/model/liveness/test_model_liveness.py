"""model.liveness and kube.leases: is the machine up, is it off for good, and when was its Lease seen renewed."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from homecluster.kube.leases import Leases
from homecluster.model.liveness import DEFAULT_GRACE, Heartbeat, lease_grace, liveness

T0 = datetime(2026, 3, 4, 10, 0, 0, tzinfo=timezone.utc)
S = timedelta(seconds=1)


def node(status: str | None = "True", at: datetime = T0) -> dict:
    stamp = at.strftime("%Y-%m-%dT%H:%M:%SZ")
    conditions = [] if status is None else [{"type": "Ready", "status": status, "lastHeartbeatTime": stamp,
                                             "lastTransitionTime": stamp}]
    return {"metadata": {"name": "worker-01"}, "status": {"conditions": conditions}}


def lease(renew: datetime | str, duration: object = 40, name: str = "worker-01") -> dict:
    stamp = renew.strftime("%Y-%m-%dT%H:%M:%S.%fZ") if isinstance(renew, datetime) else renew
    return {"metadata": {"name": name, "namespace": "kube-node-lease"},
            "spec": {"renewTime": stamp, "leaseDurationSeconds": duration}}


def test_without_a_lease_ready_is_believed():
    assert liveness(node(), None, None, T0 + timedelta(hours=1)).up
    assert not liveness(node("False"), None, None, T0).up
    assert not liveness(None, None, None, T0).up and liveness(None, None, None, T0).for_good


def test_a_lease_renewed_within_its_grace_and_after_the_power_off_is_up():
    beat = Heartbeat(T0, timedelta(seconds=40))
    assert liveness(node(), beat, T0 - S, T0 + 40 * S).up  # exactly the grace: still up
    silent = liveness(node(), beat, None, T0 + 41 * S)
    assert not silent.up and silent.for_good and "more than 40s ago" in silent.why
    before = liveness(node(), beat, T0, T0 + S)  # renewed at the power-off's end, not after: its last words
    assert not before.up and before.for_good and "before the last shutdown Job" in before.why


def test_a_notready_kubelet_that_still_speaks_is_off_but_not_for_good():
    beat = Heartbeat(T0 + 5 * S)
    blip = liveness(node("False", T0), beat, None, T0 + 10 * S)
    assert (blip.up, blip.for_good, blip.why) == (False, False, None)
    # without a Lease the NotReady post is the sign of life: for good only once silent past the grace
    assert not liveness(node("False", T0), None, None, T0 + DEFAULT_GRACE).for_good
    assert liveness(node("False", T0), None, None, T0 + DEFAULT_GRACE + S).for_good
    assert liveness(node("False", T0), None, T0, T0 + S).for_good  # nothing said after the power-off
    assert liveness(node("Unknown", T0), None, None, T0).for_good  # the node lifecycle controller's word


@pytest.mark.parametrize("value,grace", [(40, 40), (10, 10), (0, 40), (-5, 40), (10**9, 40), ("40", 40),
                                         (True, 40), (None, 40), (600, 600), (601, 40)])
def test_the_grace_is_the_lease_duration_bounded(value, grace):
    assert lease_grace({"spec": {"leaseDurationSeconds": value}}) == timedelta(seconds=grace)


def test_leases_are_stamped_when_seen_renewed_on_the_operators_clock():
    now = [T0]
    leases = Leases(clock=lambda: now[0])
    assert leases.apply(lease(T0 - 30 * S))  # new: liveness may change
    assert leases.heartbeat("worker-01").renewed_at == T0 - 30 * S  # first sight: its renewTime
    now[0] = T0 + 5 * S
    assert not leases.apply(lease(T0 - 30 * S))  # the same renewal again: nothing
    assert leases.apply(lease(T0 + S))  # seen 35 s after its last renewal: a silence, news
    assert leases.heartbeat("worker-01").renewed_at == T0 + 5 * S  # when seen, not the kubelet's word
    now[0] = T0 + 21 * S
    assert not leases.apply(lease(T0 + 20 * S))  # 16 s after the last: 0.4 of the grace, still no news
    now[0] = T0 + 38 * S
    assert leases.apply(lease(T0 + 37 * S))  # 17 s of silence: the machine went off and came back, news
    assert leases.heartbeat("other") is None
    assert leases.apply(lease(T0, name="worker-01"), deleted=True) and leases.heartbeat("worker-01") is None


def test_a_kubelet_clock_running_ahead_cannot_stretch_its_machines_life():
    now = [T0]
    leases = Leases(clock=lambda: now[0])
    leases.apply(lease(T0 + timedelta(hours=1)))  # first sight: never later than now
    assert leases.heartbeat("worker-01").renewed_at == T0
    now[0] = T0 + 3 * S
    leases.apply(lease(T0 + timedelta(hours=1, seconds=10)))
    assert leases.heartbeat("worker-01").renewed_at == T0 + 3 * S
    assert not liveness(node(), leases.heartbeat("worker-01"), None, T0 + 44 * S).up


def test_only_kube_node_lease_and_a_list_forgets_what_is_gone():
    leases = Leases(clock=lambda: T0)
    other = lease(T0)
    other["metadata"]["namespace"] = "homecluster-system"  # a leader-election Lease, say: not a kubelet's
    assert not leases.apply(other) and leases.heartbeat("worker-01") is None
    assert leases.apply(lease("not a time")) and leases.heartbeat("worker-01").renewed_at == T0  # unreadable: now
    leases.replace([lease(T0, name="worker-02")])
    assert leases.heartbeat("worker-01") is None and leases.heartbeat("worker-02") is not None


def test_what_the_answer_says_and_reads():
    assert liveness(None, None, None, T0).up is False
    beat = Heartbeat(T0)
    stale = liveness(node(), beat, None, T0 + 41 * S)
    assert stale.why == ('corev1 Node "worker-01" reads Ready but its kubelet last renewed its Lease '
                         '(kube-node-lease/worker-01) more than 40s ago: the machine is taken as off')
    before = liveness(node(), beat, T0, T0 + S)
    assert before.why == ('corev1 Node "worker-01" reads Ready but its kubelet last renewed its Lease '
                          '(kube-node-lease/worker-01) before the last shutdown Job that succeeded ended: the '
                          'machine is taken as off')
    nameless = {"status": node()["status"]}
    assert liveness(nameless, beat, T0, T0 + S).why.startswith('corev1 Node "<unnamed>" reads Ready')


def test_the_last_post_is_the_heartbeat_else_the_transition_and_unreadable_is_silent():
    only_transition = {"metadata": {"name": "worker-01"}, "status": {"conditions": [
        {"type": "Ready", "status": "False", "lastTransitionTime": T0.strftime("%Y-%m-%dT%H:%M:%SZ")}]}}
    assert not liveness(only_transition, None, None, T0 + 30 * S).for_good
    assert liveness(only_transition, None, None, T0 + 41 * S).for_good
    garbled = {"metadata": {"name": "worker-01"}, "status": {"conditions": [
        {"type": "Ready", "status": "False", "lastHeartbeatTime": "yesterday"}]}}
    assert liveness(garbled, None, None, T0).for_good  # no readable word: silent
    assert not liveness(node("False", T0), None, None, T0 + 30 * S).for_good


# ---- pinned by mutation testing (issue 23: model/liveness.py's survivors) --------------------------------------

def test_a_grace_of_exactly_one_second_is_believed():
    from homecluster.model.liveness import GRACE_BOUNDS
    assert lease_grace(lease(T0, duration=1)) == GRACE_BOUNDS[0] == timedelta(seconds=1)
    assert lease_grace(lease(T0, duration=600)) == GRACE_BOUNDS[1]
    assert lease_grace(lease(T0, duration=601)) == lease_grace(lease(T0, duration=0)) == DEFAULT_GRACE


@pytest.mark.parametrize("renew", [1772618400, 1772618400.5, ["2026-03-04T10:00:00Z"], {"t": 1}, None])
def test_a_renew_time_that_is_no_string_is_unreadable(renew):
    from homecluster.model.liveness import first_sight
    assert first_sight(renew, T0) == T0


def test_the_heartbeat_outranks_the_transition_of_a_notready_post():
    # NotReady since long ago (lastTransitionTime) but posted just now (lastHeartbeatTime): the kubelet speaks
    transitioned, posted = T0 - timedelta(hours=1), T0
    body = node("False", transitioned)
    body["status"]["conditions"][0]["lastHeartbeatTime"] = posted.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert not liveness(body, None, None, T0 + 10 * S).for_good
    del body["status"]["conditions"][0]["lastHeartbeatTime"]  # without a heartbeat the transition is the word
    assert liveness(body, None, None, T0 + 10 * S).for_good


def test_conditions_that_are_no_objects_are_passed_over():
    body = node("True")
    body["status"]["conditions"] = ["Ready", None, 7, *body["status"]["conditions"]]
    assert liveness(body, None, None, T0).up
