"""The Pod status a kubelet reports: waiting, running, terminated.

Pure: no I/O, the clock is passed in.
"""
from __future__ import annotations

from typing import Any


def _conditions(now: str, ready: bool, scheduled: bool = True) -> list[dict[str, Any]]:
    flag = "True" if ready else "False"
    return [
        {"type": "PodScheduled", "status": "True" if scheduled else "False", "lastTransitionTime": now},
        {"type": "Initialized", "status": "True", "lastTransitionTime": now},
        {"type": "ContainersReady", "status": flag, "lastTransitionTime": now},
        {"type": "Ready", "status": flag, "lastTransitionTime": now},
    ]


def _container_status(container: dict[str, Any], state: dict[str, Any], ready: bool, started: bool
                      ) -> dict[str, Any]:
    image = container.get("image") or ""
    return {"name": container["name"], "image": image, "imageID": "", "ready": ready, "started": started,
            "restartCount": 0, "state": state}


def status_waiting(pod: dict[str, Any], now: str, reason: str, message: str) -> dict[str, Any]:
    """Pending: the container cannot start yet (a missing Secret or ConfigMap)."""
    return {
        "phase": "Pending", "hostIP": "127.0.0.1", "conditions": _conditions(now, ready=False),
        "containerStatuses": [_container_status(c, {"waiting": {"reason": reason, "message": message}}, False,
                                                False) for c in pod["spec"]["containers"]],
    }


def status_running(pod: dict[str, Any], now: str) -> dict[str, Any]:
    return {
        "phase": "Running", "hostIP": "127.0.0.1", "podIP": "127.0.0.1", "podIPs": [{"ip": "127.0.0.1"}],
        "startTime": now, "conditions": _conditions(now, ready=True),
        "containerStatuses": [_container_status(c, {"running": {"startedAt": now}}, True, True)
                              for c in pod["spec"]["containers"]],
    }


def status_terminated(pod: dict[str, Any], started: str, now: str, exit_code: int, message: str = "",
                      reason: str | None = None) -> dict[str, Any]:
    """Succeeded when the container exited 0, else Failed; `message` is the termination message."""
    phase = "Succeeded" if exit_code == 0 else "Failed"
    term: dict[str, Any] = {"exitCode": exit_code, "reason": reason or ("Completed" if exit_code == 0 else "Error"),
                            "startedAt": started, "finishedAt": now}
    if message:
        term["message"] = message
    return {
        "phase": phase, "hostIP": "127.0.0.1", "podIP": "127.0.0.1", "podIPs": [{"ip": "127.0.0.1"}],
        "startTime": started, "conditions": _conditions(now, ready=False),
        "containerStatuses": [_container_status(c, {"terminated": term}, False, False)
                              for c in pod["spec"]["containers"]],
    }
