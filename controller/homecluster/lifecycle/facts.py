"""The facts one slot pass reads, taken from the store in one go: nothing else is consulted.

slot, its Group, every claim naming it, its corev1 Node (by providerID, else by name, when model.boundary
accepts it) and its Jobs,
plus the time; and the pods the owner's action needs (not cached: read by lifecycle.podreads just before
that action, into `pods`; lifecycle.podsview). Derived views (who owns the slot, observed power,
usability, the startup Job of a claim) are computed here so every lifecycle module reads them the same way.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from typing import Any

from homecluster import names
from homecluster.jobs import job_outcome, job_times, owned_by, startup_job_name
from homecluster.model.supersede import SlotClaimView, slot_claim_view
from homecluster.model.objects import (claim_startup_job, conditions_of, dig, name_of, phase_text, slot_group,
                                       slot_last_claim, uid_of)
from homecluster.model.liveness import Heartbeat, Liveness, liveness
from homecluster.model.observe import Observation, observe
from homecluster.model.phases import ClaimPhase, PowerState, Reason
from homecluster.model.timestamps import TimestampError, format_time, parse_time
from homecluster.kube.store import Store
from homecluster.model.boundary import Refusal
from homecluster.lifecycle.podsview import PodsView

Obj = Mapping[str, Any]


def active(job: Obj) -> bool:
    """The Job has not ended, or its Pods are still terminating (status.terminating, Kubernetes 1.28+):
    a Pod being killed may still be sending its power command, so the Job is not over yet."""
    return job_outcome(job) == "running" or int(dig(job, "status", "terminating", default=0) or 0) > 0


def live_pod(pods: Iterable[Obj]) -> Obj | None:
    """The first pod that has not ended (phase neither Succeeded nor Failed), terminating ones included.

    A shutdown Job's pod can outlive its Job: a Job deleted with Background propagation (kubectl's
    default, or the garbage collector after its owner went) leaves the store at once while its pod
    is still being killed -- and may still be sending its power command."""
    return next((p for p in pods if phase_text(p) not in ("Succeeded", "Failed")), None)


@dataclass(frozen=True)
class Facts:
    slot_name: str
    slot: Obj | None
    group: Obj | None
    claims: list[Obj]
    node: Obj | None
    jobs: list[Obj]
    now: datetime
    # why the Node the slot declares is not taken as its machine (model.boundary); `node` is then None
    refusal: Refusal | None = None
    # the Node's Lease as the operator saw it renewed (kube.leases); None: no Lease known, Ready is believed
    heartbeat: Heartbeat | None = None
    # the pods read for the owner's action (lifecycle.podreads); empty until then
    pods: PodsView = PodsView()

    @classmethod
    def gather(cls, store: Store, slot_name: str, now: datetime, pods: PodsView = PodsView()) -> "Facts":
        slot = store.slot(slot_name)
        group = store.group(slot_group(slot)) if slot else None
        refusal = store.node_refusal(slot) if slot else None
        node = store.node_of_slot(slot) if slot and refusal is None else None
        heartbeat = store.leases.heartbeat(name_of(node)) if node is not None else None
        return cls(slot_name, slot, group, store.claims_of_slot(slot_name), node, store.jobs_of_slot(slot_name), now,
                   refusal, heartbeat, pods)

    def again(self, store: Store) -> "Facts":
        """The same slot at the same moment, read again after a write (the pods read in this pass kept)."""
        return Facts.gather(store, self.slot_name, self.now, self.pods)

    @cached_property
    def view(self) -> SlotClaimView:
        return slot_claim_view(self.claims)

    @cached_property
    def liveness(self) -> Liveness:
        """Is the machine up, from what its kubelet says (model.liveness): every "is it still on" reads this."""
        return liveness(self.node, self.heartbeat, self.last_power_off(), self.now)

    @cached_property
    def observation(self) -> Observation:
        return observe(self.node, self.group, self.liveness.why)

    @property
    def power(self) -> PowerState:
        return self.observation.power

    @property
    def on(self) -> bool:
        return self.power == PowerState.ON

    def job(self, name: str) -> Obj | None:
        return next((j for j in self.jobs if name_of(j) == name), None)

    def startup_job(self, claim: Obj) -> Obj | None:
        return self.job(claim_startup_job(claim) or startup_job_name(name_of(claim)))

    def shutdown_jobs(self) -> list[Obj]:
        return [j for j in self.jobs if dig(j, "metadata", "labels", names.LABEL_JOB_KIND) == "shutdown"]

    def running_shutdown(self) -> Obj | None:
        """A shutdown Job of this slot that has not ended (whoever fired it); see `active`."""
        return next((j for j in self.shutdown_jobs() if active(j)), None)

    def running_jobs_of(self, claim: Obj) -> list[Obj]:
        """The claim's own Jobs (its controller ownerReference) that have not ended: its pending work."""
        uid = uid_of(claim)
        return [j for j in self.jobs if active(j) and uid and owned_by(j, uid)]

    def last_shutdown_end(self) -> datetime | None:
        return _latest_end(j for j in self.shutdown_jobs() if not active(j))

    def last_power_off(self) -> datetime | None:
        """When the machine was last known off: the slot's last shutdown Job that succeeded ended (it saw the
        machine off), or the slot's last claim was released (completed/Released is written only once the machine
        is seen off; its shutdown Job may since be collected with the claim). None if neither is on record. A
        failed shutdown Job is no evidence the power went off."""
        ends = [e for e in (_latest_end(j for j in self.shutdown_jobs() if job_outcome(j) == "succeeded"),
                            _released_at(self.slot)) if e is not None]
        return max(ends) if ends else None

    def registered_at(self, claim: Obj) -> datetime | None:
        """When the machine joined for `claim`'s boot: its Node reports Ready, since the Ready condition's
        last transition (the kubelet's clock; else the Node's creation). None while it has not joined.

        A Ready that began before the slot's last successful shutdown Job ended is a report from before that
        power-off (a kubelet that is off posts nothing; the node lifecycle controller marks the Node Unknown
        only after its grace period), so it is the join of this boot only once the claim's startup Job has
        succeeded (the machine answered its boot port after the power-on), and from that moment."""
        if self.node is None or not self.on:
            return None
        ready = next((c for c in conditions_of(self.node)
                      if c.get("type") == "Ready"), {})
        since = parse_time(ready.get("lastTransitionTime")) \
            or parse_time(dig(self.node, "metadata", "creationTimestamp")) or self.now
        off = self.last_power_off()
        if off is None or since >= off:
            return since
        job = self.startup_job(claim)
        succeeded = job_times(job).finished_at if job is not None and job_outcome(job) == "succeeded" else None
        return max(since, succeeded) if succeeded is not None else None

    def boot_view(self, claim: Obj) -> dict:
        """The claim as the model's boot clocks read it, with the moments the cluster already records
        (the startup Job's completionTime, the Node's registration) filled into status when the
        claim does not carry them: no status write is needed to run those clocks."""
        status = dict(claim.get("status") or {})
        job = self.startup_job(claim)
        if job is not None and not status.get("startupSucceededAt") and job_outcome(job) == "succeeded":
            done = job_times(job).finished_at
            if done is not None:
                status["startupSucceededAt"] = format_time(done)
        registered = self.registered_at(claim)
        if registered is not None and not status.get("registeredAt"):
            started = parse_time(status.get("bootStartedAt"))
            status["registeredAt"] = format_time(max(registered, started) if started else registered)
        if not status.get("phase"):
            status["phase"] = ClaimPhase.PENDING.value
        return {**claim, "status": status}


def _released_at(slot: Obj | None) -> datetime | None:
    """The slot's lastClaim.finishedAt when that claim ended completed/Released (the machine was seen off)."""
    last = slot_last_claim(slot)
    if not isinstance(last, Mapping) or (last.get("phase"), last.get("reason")) != \
            (ClaimPhase.COMPLETED.value, Reason.RELEASED.value):
        return None
    try:
        return parse_time(last.get("finishedAt"))
    except TimestampError:
        return None


def _latest_end(jobs: Iterable[Obj]) -> datetime | None:
    """The latest end among `jobs` whose end is known; None if none."""
    ends = [e for e in (job_times(j).finished_at for j in jobs) if e is not None]
    return max(ends) if ends else None
