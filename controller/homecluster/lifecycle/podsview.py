"""The pods (and Events) a slot pass read, as part of its Facts: what the decisions that need them read.

Pods are not cached (the operator watches no Pods), so they are read from the Jobs' namespace by the pass
itself (lifecycle.podreads), before the owner's action, and only what that action can need on these facts
(`PodReads`, declared by the owner step beside its action): a running Job's pod that may not start
(lifecycle.jobpods), and the pods of the slot's shutdown Jobs that may outlive their Job
(lifecycle.shutdown.hold_for_pods). A pass on a quiet slot reads none. A decision asking for something
that was not read is a bug in that declaration: `NotRead` says so, never a silent "no pod".
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from homecluster.model.objects import dig, name_of

Obj = Mapping[str, Any]


class NotRead(LookupError):
    """A decision read pods its step did not declare (`PodReads`): a bug, never a cluster state."""


def job_key(job: Obj) -> str:
    """One Job, told apart from an earlier Job of the same name by its uid."""
    return f"{dig(job, 'metadata', 'namespace')}/{name_of(job)}/{dig(job, 'metadata', 'uid') or ''}"


@dataclass(frozen=True)
class PodReads:
    """What a step needs read before it decides: the pods of these running Jobs (and the Events of the
    pending one), and whether the pods of the slot's shutdown Jobs (by label, Jobs gone or not)."""

    jobs: tuple[Obj, ...] = ()
    shutdown_pods: bool = False

    def __bool__(self) -> bool:
        return bool(self.jobs) or self.shutdown_pods


NOTHING = PodReads()


@dataclass(frozen=True)
class JobPods:
    """One running Job's pods as read in this pass, and the Events about the first pending one (read only
    when one is pending). `unread`: not read in this pass -- its pod left Pending in an earlier pass, or the
    read failed (logged, lifecycle.jobpods). `retry` (with `unread`): the call failed on its way (a dropped
    connection, a timeout), so it is read again at the next recheck; else never again."""

    pods: tuple[Obj, ...] = ()
    events: tuple[Obj, ...] = ()
    unread: bool = False
    retry: bool = False


@dataclass(frozen=True)
class PodsView:
    """The pods a pass read (empty: none read). Immutable: a decision cannot change what it was given."""

    jobs: Mapping[str, JobPods] = field(default_factory=lambda: MappingProxyType({}))
    shutdown: tuple[Obj, ...] | None = None  # the slot's shutdown Jobs' pods (None: not read)

    def of_job(self, job: Obj) -> JobPods:
        found = self.jobs.get(job_key(job))
        if found is None:
            raise NotRead(f"the pods of Job {name_of(job)} were not read in this pass")
        return found

    def shutdown_pods(self) -> tuple[Obj, ...]:
        if self.shutdown is None:
            raise NotRead("the pods of the slot's shutdown Jobs were not read in this pass")
        return self.shutdown
