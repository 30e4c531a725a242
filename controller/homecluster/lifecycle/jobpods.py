"""Why a lifecycle Job's pod cannot start, read from the pod and its Events as a real kubelet reports it.

A slot whose credentials Secret is missing (or misnamed) leaves the startup Job's pod waiting: the
kubelet shows a bare `ContainerCreating` and posts a Warning `FailedMount` Event ("MountVolume.SetUp
failed for volume "credentials" : secret "worker-01-bmc" not found"), or, for a Secret named in the
environment, `CreateContainerConfigError` with the message on the container. Nothing of that reaches
the Job's status, so without this the claim sat in booting until its deadline with no hint.

The kubelet retries both, so a single one is no proof: a "failed to sync secret cache" hiccup, or a
Secret that GitOps creates seconds after the Job, produces the same Event once and then the pod starts.
So a pod is blocked only once the failure has persisted for `settle` (settings.pod_blocked_settle):
- a FailedMount/FailedAttachVolume Event about this pod (its uid when both carry one), first seen no
  earlier than the pod's creation, repeated (count >= 2) over at least `settle` from its firstTimestamp
  to its lastTimestamp: the kubelet kept failing that long;
- a `CreateContainerConfigError` on a pod at least `settle` old (the waiting state carries no time);
- `InvalidImageName` / `ErrImageNeverPull` at once: the pod spec cannot change, no retry clears them.
`CreateContainerError` is not read: the kubelet usually clears it on a retry.

`pod_blocker` is pure: the pods of one Job, the Events about them, now and the settle time in; the first
reason the pod will not start by itself out ("FailedMount: ..."), or None while it may still start.
`read` does the reads in the Jobs' namespace (a Role grants exactly those): the Job's pods by label,
and only then, for a pod still Pending, the Events about that one pod (a field selector, never every
Event of the namespace). The slot pass runs it before the owner's action (lifecycle.podreads) for the
running Job the boot monitor or the shutdown hold will look at, at once and every POD_RECHECK after; they
decide with `look`, pure, from what was read (the pass's Facts.pods).
"""
from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from homecluster.model.objects import dig, name_of
from homecluster.model.timestamps import TimestampError, parse_time
from homecluster.kube import client as kube
from homecluster.lifecycle.context import Context
from homecluster.lifecycle.podsview import JobPods, job_key

Obj = Mapping[str, Any]
log = logging.getLogger(__name__)

# how often a running Job's pod is asked again why it has not started (the first look is at once)
POD_RECHECK = timedelta(seconds=5)
# container waiting reasons no retry of the kubelet's clears (the pod spec cannot change): blocked at once
NEVER_CLEARS = frozenset({"InvalidImageName", "ErrImageNeverPull"})
# container waiting reasons the kubelet retries (a Secret or ConfigMap may still appear): blocked once settled
STUCK_WAITING = frozenset({"CreateContainerConfigError"})
# Warning Events on a pending pod that name what is missing: blocked once repeated over the settle time
STUCK_EVENTS = frozenset({"FailedMount", "FailedAttachVolume"})
JOB_NAME_LABEL = "job-name"
MAX_MESSAGE = 512


def _waiting(pod: Obj) -> Iterable[Obj]:
    for status in (dig(pod, "status", "initContainerStatuses", default=[]) or []) + \
            (dig(pod, "status", "containerStatuses", default=[]) or []):
        waiting = dig(status, "state", "waiting")
        if isinstance(waiting, Mapping) and waiting:
            yield waiting


def _time(value: Any) -> datetime | None:
    try:
        return parse_time(value) if isinstance(value, str) else None
    except TimestampError:
        return None


def _persisted(event: Obj, pod: Obj, settle: timedelta) -> bool:
    """The kubelet repeated this failure for at least `settle`, all of it after the pod was created."""
    created = _time(dig(pod, "metadata", "creationTimestamp"))
    first = _time(event.get("firstTimestamp")) or _time(event.get("eventTime"))
    last = _time(event.get("lastTimestamp")) or _time(dig(event, "series", "lastObservedTime"))
    count = event.get("count") or dig(event, "series", "count") or 1
    if first is None or last is None or created is None or first < created:
        return False
    return isinstance(count, int) and count >= 2 and last - first >= settle


def _about(event: Obj, pod: Obj) -> bool:
    involved = event.get("involvedObject") or {}
    if involved.get("kind") != "Pod" or involved.get("name") != name_of(pod):
        return False
    uid, pod_uid = involved.get("uid"), dig(pod, "metadata", "uid")
    return not (uid and pod_uid and uid != pod_uid)  # an Event of an earlier pod of the same name is not this one's


def _text(reason: str, message: Any) -> str:
    return f"{reason}: {message or 'no message'}"[:MAX_MESSAGE]


def pod_blocker(pods: Iterable[Obj], events: Iterable[Obj], now: datetime, settle: timedelta) -> str | None:
    """'<reason>: <message>' for the first pending pod whose failure to start has persisted, else None."""
    events = list(events)
    for pod in pods:
        if dig(pod, "status", "phase") not in (None, "Pending"):
            continue
        created = _time(dig(pod, "metadata", "creationTimestamp"))
        old_enough = created is not None and now - created >= settle
        for waiting in _waiting(pod):
            reason = waiting.get("reason")
            if reason in NEVER_CLEARS or (reason in STUCK_WAITING and old_enough):
                return _text(reason, waiting.get("message"))
        for event in events:
            if _about(event, pod) and event.get("type") == "Warning" and event.get("reason") in STUCK_EVENTS \
                    and _persisted(event, pod, settle):
                return _text(event["reason"], event.get("message"))
    return None


@dataclass(frozen=True)
class Look:
    """What one look at a running Job's pod found: `blocked` = (pod name, why); `again`: look again later
    (False once its pod left Pending, or when the pod or its Events cannot be read)."""

    blocked: tuple[str, str] | None = None
    again: bool = True


def pending(pods: Iterable[Obj]) -> list[Obj]:
    """The pods that have not left Pending (no phase yet counts)."""
    return [p for p in pods if dig(p, "status", "phase") in (None, "Pending")]


def look(found: JobPods, now: datetime, settle: timedelta) -> Look:
    """Whether the Job's pod cannot start by itself, from what `read` found in this pass (the pass's Facts).
    A Job whose pod has left Pending, or whose pod the API refused to show, is not looked at again; one whose
    read failed on its way is looked at again later."""
    if found.retry:
        return Look()
    if found.unread:
        return Look(again=False)
    waiting = pending(found.pods)
    if not waiting:
        return Look(again=not found.pods)  # no pod yet: again; its pod started (or ended): nothing to look for
    pod = waiting[0]
    why = pod_blocker([pod], found.events, now, settle)
    return Look(blocked=(name_of(pod), why)) if why else Look()


# Jobs (by podsview.job_key) whose pod has started, or whose pod cannot be read: never read again (bounded)
_DONE: set[str] = set()
MAX_DONE = 4096


def _done(job: Obj) -> None:
    if len(_DONE) >= MAX_DONE:
        _DONE.clear()
    _DONE.add(job_key(job))


async def read(ctx: Context, job: Obj) -> JobPods:
    """Read the running Job's pods in the Jobs' namespace, and the Events about its first pending pod.

    A Job whose pod has left Pending is not read again. A refused read (a Role that lost a verb) is logged
    once and ends the reading too: the Job's own activeDeadlineSeconds still ends it. A read that failed on
    its way (kube.READ_FAILURES but an API answer: a dropped connection, a timeout, a cut answer) is logged
    and tried again at the next recheck. Either way the rest of the slot's pass goes on."""
    if job_key(job) in _DONE:
        return JobPods(unread=True)
    namespace = ctx.jobs_namespace
    try:
        pods, _ = await ctx.client.list(kube.PODS, namespace=namespace,
                                        label_selector=f"{JOB_NAME_LABEL}={name_of(job)}")
        waiting = pending(pods)
        if not waiting:
            if pods:  # its pod started (or ended): nothing left to look for
                _done(job)
            return JobPods(tuple(pods))
        events, _ = await ctx.client.list(kube.EVENTS, namespace=namespace, field_selector=(
            f"involvedObject.kind=Pod,involvedObject.name={name_of(waiting[0])}"))
    except kube.ApiError as exc:
        log.warning("Job %s/%s: cannot read its pod or the pod's Events to see why it has not started (%s); "
                    "not looking again, the Job's own deadline ends it", namespace, name_of(job), exc)
        _done(job)
        return JobPods(unread=True)
    except kube.READ_FAILURES as exc:
        log.warning("Job %s/%s: the read of its pod or the pod's Events failed (%s: %s); asking again in %d s",
                    namespace, name_of(job), type(exc).__name__, exc, POD_RECHECK.total_seconds())
        return JobPods(unread=True, retry=True)
    return JobPods(tuple(pods), tuple(events))
