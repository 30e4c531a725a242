"""The pass's one reader of pods: what the owner's action declared it needs (podsview.PodReads), read from the
Jobs' namespace into the Facts before that action runs, so its decisions read pods only from the Facts.

Run by lifecycle.owner.act on the very Facts the action then gets (one snapshot: what was declared is
what is decided on), and inside the owner step, so a failed read meets the same handling as a failed
action (the slot status is still written, then the error goes to the retry policy). Nothing declared,
nothing read: a pass on a quiet slot makes no call here.
"""
from __future__ import annotations

import dataclasses
from types import MappingProxyType

from homecluster import names
from homecluster.jobs import label_value
from homecluster.kube import client as kube
from homecluster.lifecycle import jobpods
from homecluster.lifecycle.context import Context
from homecluster.lifecycle.facts import Facts
from homecluster.lifecycle.podsview import PodReads, PodsView, job_key


async def load(ctx: Context, facts: Facts, reads: PodReads) -> Facts:
    """`facts` with what `reads` names read onto Facts.pods (the same Facts when it names nothing).

    A running Job's pod and its Events: lifecycle.jobpods.read (a failed read is logged once and ends the
    looking). The slot's shutdown Jobs' pods: listed by the `slot` and `job-kind` labels their template
    carries, so found after their Job is gone; a failed list raises."""
    if not reads:
        return facts
    jobs = {job_key(job): await jobpods.read(ctx, job) for job in reads.jobs}
    shutdown = None
    if reads.shutdown_pods:
        selector = f"{names.LABEL_SLOT}={label_value(facts.slot_name)},{names.LABEL_JOB_KIND}=shutdown"
        pods, _ = await ctx.client.list(kube.PODS, namespace=ctx.jobs_namespace, label_selector=selector)
        shutdown = tuple(pods)
    return dataclasses.replace(facts, pods=PodsView(MappingProxyType(jobs), shutdown))
