"""claims.jobpods.pod_blocker: which pod states and Events mean a Job's pod will not start by itself."""
from __future__ import annotations

from homecluster.claims.jobpods import pod_blocker


def pod(name="c1-startup-abcde", phase="Pending", waiting=None):
    status = {"phase": phase}
    if waiting:
        status["containerStatuses"] = [{"name": "ansible-runner", "state": {"waiting": waiting}}]
    return {"metadata": {"name": name}, "status": status}


def event(name="c1-startup-abcde", reason="FailedMount", type_="Warning", message="secret \"bmc\" not found"):
    return {"involvedObject": {"kind": "Pod", "name": name}, "type": type_, "reason": reason, "message": message}


def test_a_failed_mount_event_on_a_pending_pod_blocks_it():
    assert pod_blocker([pod(waiting={"reason": "ContainerCreating"})], [event()]) == \
        'FailedMount: secret "bmc" not found'


def test_a_secret_named_in_the_environment_blocks_with_the_container_message():
    waiting = {"reason": "CreateContainerConfigError", "message": 'secret "bmc" not found'}
    assert pod_blocker([pod(waiting=waiting)], []) == 'CreateContainerConfigError: secret "bmc" not found'


def test_what_may_still_start_is_not_a_blocker():
    assert pod_blocker([pod(waiting={"reason": "ContainerCreating"})], []) is None
    assert pod_blocker([pod()], [event(name="another-pod")]) is None
    assert pod_blocker([pod()], [event(type_="Normal", reason="Scheduled")]) is None
    assert pod_blocker([pod(phase="Running")], [event()]) is None
    assert pod_blocker([], [event()]) is None


def test_a_long_message_is_cut():
    assert len(pod_blocker([pod()], [event(message="x" * 5000)])) == 512
