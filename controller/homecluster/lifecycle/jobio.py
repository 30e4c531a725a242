"""Creating and stopping lifecycle Jobs, idempotently.

Job names are deterministic (homecluster.jobs.naming), so a create retried after a crash meets its
own Job: 409 AlreadyExists counts as done, which is what makes "Job created, then the operator died
before writing booting" safe -- no second Job, no second power-on. The one exception is a shutdown
name met again after its round ended (a finished Job of the same name from an earlier round): that
Job is stale, so it is deleted and the pass retried, rather than mistaken for a fresh firing.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from homecluster.jobs import JobSpecError, job_outcome, job_times, owned_by
from homecluster.model.objects import dig, name_of, owner_references
from homecluster.kube import client as kube
from homecluster.lifecycle.context import Context, remember
from homecluster.kube.store import JOBS

Obj = Mapping[str, Any]


class StaleJob(Exception):
    """A finished Job holds the name a new firing needs; it was deleted, retry the pass."""


class ForeignJob(JobSpecError):
    """A Job of the name this step needs exists and is not owned by this step's owner: never adopted."""


def _owner_uid(body: Mapping[str, Any]) -> str:
    refs = owner_references(body)
    return next((r.get("uid", "") for r in refs if r.get("controller")), "")


_FOREIGN_REMEMBERED = 1024
_OWNER_FIELD = 253  # an ownerReference's fields are not bounded by the API server: said at most this long


def _said(value: Any) -> str:
    """An API string as it goes into a message: one line (whitespace runs made one space), bounded."""
    return " ".join(str(value).split())[:_OWNER_FIELD]


def _owner_text(job: Obj) -> str:
    refs = [f'{_said(r.get("kind"))} "{_said(r.get("name"))}" (uid {_said(r.get("uid"))})'
            for r in owner_references(job) if r.get("controller")]
    return refs[0] if refs else "no owner"


async def create_job(ctx: Context, body: Mapping[str, Any], *, reuse_finished: bool = True) -> Obj:
    """Create `body`; an existing Job of that name is returned instead (see module doc)."""
    name = name_of(body)
    uid = _owner_uid(body)
    if name in ctx.foreign_jobs:  # met before: read it (a read, not a write) rather than try the create again
        try:
            current = await ctx.client.get(kube.JOBS, name, namespace=ctx.jobs_namespace)
        except kube.NotFound:
            current = None
        if current is not None and uid and not owned_by(current, uid):
            _refuse(ctx, name, uid, current)
        ctx.foreign_jobs.pop(name, None)
    try:
        job = await ctx.client.create(kube.JOBS, body, namespace=ctx.jobs_namespace)
        ctx.store.apply(JOBS, job)
        ctx.log.info("created Job %s/%s", ctx.jobs_namespace, name)
        return job
    except kube.AlreadyExists:
        pass
    job = ctx.store.job(name)
    if job is None:
        job = await ctx.client.get(kube.JOBS, name, namespace=ctx.jobs_namespace)
        ctx.store.apply(JOBS, job)
    if uid and not owned_by(job, uid):
        _refuse(ctx, name, uid, job)
    if not reuse_finished and job_outcome(job) != "running":
        await delete_job(ctx, name)
        raise StaleJob(f"Job {ctx.jobs_namespace}/{name} is left over from an earlier shutdown round; deleted it")
    return job


def _refuse(ctx: Context, name: str, uid: str, job: Obj) -> None:
    # Someone else's Job under this step's name (a leftover of a deleted owner, or planted): adopting it would read
    # its outcome as this step's. Refused; the caller reports it. Remembered (bounded), so the next pass reads it
    # instead of trying the create again: a create answered AlreadyExists is a write, and a pass that wrote is
    # re-run at once -- a loop of POSTs for as long as the foreign Job stays.
    remember(ctx.foreign_jobs, name, _FOREIGN_REMEMBERED)
    raise ForeignJob(f"Job {ctx.jobs_namespace}/{name} already exists and belongs to {_owner_text(job)}, not to "
                     f"this step's owner (uid {uid}); it was not adopted. Delete that Job if it is a leftover")


async def delete_job(ctx: Context, name: str, propagation: str = "Background") -> None:
    """Delete a Job and its Pods (Background propagation by default; the batch/v1 default would orphan the
    Pods; Foreground keeps the Job until its Pods are gone).

    The answer goes into the store at once, as every write's does: the Job marked for deletion (Foreground), or
    gone (deleted, or 404: already gone). Without it a store that never got the Job's watch event (issue 23,
    chaos seed 7000: the Job went between the operator's own list and its watch's) kept the Job running; the
    pass, which counts the DELETE as a write, ran again at once and sent it again (about a thousand a second,
    each answered 404), and waited for that Job for good."""
    try:
        left = await ctx.client.delete(kube.JOBS, name, namespace=ctx.jobs_namespace, propagation=propagation)
        ctx.log.info("deleted Job %s/%s", ctx.jobs_namespace, name)
    except kube.NotFound:
        left = None
    if left is not None:
        ctx.store.apply(JOBS, left)
        return
    held = ctx.store.job(name)
    if held is not None:
        ctx.store.apply(JOBS, held, deleted=True)


_TIMED_JOBS_KEPT = 4096


def observe_job_end(ctx: Context, job: Obj) -> None:
    """Record a finished Job's duration once (metrics), keyed by its uid."""
    # bounded: Jobs are collected (TTL, owner GC), so an old uid is never seen again and the oldest can go
    seen = ctx.jobs_timed
    uid = dig(job, "metadata", "uid", default=name_of(job))
    outcome = job_outcome(job)
    if outcome == "running" or uid in seen:
        return
    seen[uid] = None
    while len(seen) > _TIMED_JOBS_KEPT:
        del seen[next(iter(seen))]
    times = job_times(job)
    if times.started_at and times.finished_at:
        kind = dig(job, "metadata", "labels", "infra.homecluster.dev/job-kind", default="unknown")
        ctx.metrics.job_seconds.labels(kind, outcome).observe((times.finished_at - times.started_at).total_seconds())
