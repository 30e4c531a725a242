"""Why a lifecycle Job's pod cannot start, read from the pod and its Events as a real kubelet reports it.

A slot whose credentials Secret is missing (or misnamed) leaves the startup Job's pod waiting: the
kubelet shows a bare `ContainerCreating` and posts a Warning `FailedMount` Event ("MountVolume.SetUp
failed for volume "credentials" : secret "worker-01-bmc" not found"), or, for a Secret named in the
environment, `CreateContainerConfigError` with the message on the container. Nothing of that reaches
the Job's status, so without this the claim sat in booting until its deadline with no hint.

`pod_blocker` is pure: the pods of one Job and the Events of its namespace in, the first reason the
pod will not start by itself out ("FailedMount: ..."), or None while it may still start. `blocker`
does the two reads (pods and Events of the Job's namespace: a Role grants exactly those); the boot
monitor calls it for a running startup Job at once and every POD_RECHECK after.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import timedelta
from typing import Any

from homecluster.model.objects import dig, name_of
from homecluster.operator import kube
from homecluster.operator.context import Context

Obj = Mapping[str, Any]

# how often a running startup Job's pod is asked again why it has not started (the first look is at once)
POD_RECHECK = timedelta(seconds=5)
# container waiting reasons that no retry of the kubelet's will clear by itself
STUCK_WAITING = frozenset({"CreateContainerConfigError", "CreateContainerError", "InvalidImageName",
                           "ErrImageNeverPull"})
# Warning Events on a pending pod that name what is missing
STUCK_EVENTS = frozenset({"FailedMount", "FailedAttachVolume"})
JOB_NAME_LABEL = "job-name"
MAX_MESSAGE = 512


def _waiting(pod: Obj) -> Iterable[Obj]:
    for status in (dig(pod, "status", "initContainerStatuses", default=[]) or []) + \
            (dig(pod, "status", "containerStatuses", default=[]) or []):
        waiting = dig(status, "state", "waiting")
        if waiting:
            yield waiting


def pod_blocker(pods: Iterable[Obj], events: Iterable[Obj]) -> str | None:
    """'<reason>: <message>' for the first pending pod that cannot start by itself, else None."""
    events = list(events)
    for pod in pods:
        if dig(pod, "status", "phase") not in (None, "Pending"):
            continue
        for waiting in _waiting(pod):
            if waiting.get("reason") in STUCK_WAITING:
                return f"{waiting['reason']}: {waiting.get('message') or 'no message'}"[:MAX_MESSAGE]
        name = name_of(pod)
        for event in events:
            if dig(event, "involvedObject", "kind") == "Pod" and dig(event, "involvedObject", "name") == name \
                    and event.get("type") == "Warning" and event.get("reason") in STUCK_EVENTS:
                return f"{event['reason']}: {event.get('message') or 'no message'}"[:MAX_MESSAGE]
    return None


async def blocker(ctx: Context, job: Obj) -> tuple[str, str] | None:
    """(pod name, why) when the Job's pod cannot start by itself; None while it may still start."""
    namespace = dig(job, "metadata", "namespace") or ctx.namespace
    pods, _ = await ctx.client.list(kube.PODS, namespace=namespace, label_selector=f"{JOB_NAME_LABEL}={name_of(job)}")
    events, _ = await ctx.client.list(kube.EVENTS, namespace=namespace)
    pending = [p for p in pods if dig(p, "status", "phase") in (None, "Pending")]
    why = pod_blocker(pending, events)
    return (name_of(pending[0]), why) if why and pending else None
