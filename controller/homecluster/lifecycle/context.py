"""What every part of a slot pass needs: the client, the store, the settings, the clock, metrics, logs.

One object passed down instead of globals, so tests build one against the lab with a fake clock,
and two operators can run in one process without sharing anything.
"""
from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from homecluster.jobs.manifest import DEFAULT_SERVICE_ACCOUNT
from homecluster.jobs.policy import JobPolicy
from homecluster.metrics import Metrics
from homecluster.model.settings import Settings
from homecluster.kube.client import KubeClient
from homecluster.kube.store import Store
from homecluster.version import version

DEFAULT_NAMESPACE = "homecluster-system"
RUNNER_REPOSITORY = "ghcr.io/homecluster-dev/homecluster-runner"


def runner_image(operator_version: str) -> str:
    """The runner image of the operator's own release: never a moving tag such as `latest`, whose content can
    change under Jobs that hold BMC credentials and a node token. An operator not installed as a distribution
    (no version) names a tag no registry has, so its Jobs fail visibly until --job-image names one."""
    tag = operator_version if re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}", operator_version) else "unknown-version"
    return f"{RUNNER_REPOSITORY}:{tag}"


DEFAULT_JOB_IMAGE = runner_image(version())
# slot passes at once: a pass mostly waits for the API server, and one slot never runs twice at once
DEFAULT_WORKERS = 64
# core/v1 Events about cluster-scoped objects are stored in this namespace (as kubectl expects)
EVENTS_NAMESPACE = "default"
_EVENTS_REMEMBERED = 4096


def remember(seen: dict[str, None], key: str, limit: int) -> None:
    """Add `key` to an insertion-ordered memory, forgetting the oldest beyond `limit` (bounded)."""
    seen[key] = None
    while len(seen) > limit:
        del seen[next(iter(seen))]


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


@dataclass
class Context:
    client: KubeClient
    store: Store
    settings: Settings = field(default_factory=Settings)
    namespace: str = DEFAULT_NAMESPACE
    job_image: str = DEFAULT_JOB_IMAGE
    # Where lifecycle Jobs run and the Secrets they mount live; empty: the operator's own namespace.
    # config/ and the Helm chart keep them in homecluster-system by default; --job-namespace (the chart's
    # jobNamespace) gives them one of their own (docs/install.md, "Lifecycle Jobs in a namespace of their own").
    job_namespace: str = ""
    # Images and ServiceAccounts a Group's spec.jobs may choose besides job_image and homecluster-job
    # (jobs.policy; the operator's and the autoscaler's accounts are refused whatever this says).
    job_images: tuple[str, ...] = ()
    job_service_accounts: tuple[str, ...] = ()
    clock: Callable[[], datetime] = utcnow
    metrics: Metrics = field(default_factory=Metrics)
    log: logging.Logger = field(default_factory=lambda: logging.getLogger("homecluster.controller"))
    # uids of finished Jobs whose duration was already observed (lifecycle.jobio.observe_job_end)
    jobs_timed: dict[str, None] = field(default_factory=dict)
    # names of the Events this process posted or found posted (deterministic names: `posted`, `remember_post`)
    events_posted: dict[str, None] = field(default_factory=dict)
    # names of Jobs found held by someone else's Job (lifecycle.jobio.create_job): read, not created, next time
    foreign_jobs: dict[str, None] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # the Leases are stamped with the moment they were seen renewed, on the clock the passes read
        self.store.leases.clock = self.clock

    def now(self) -> datetime:
        return self.clock()

    def posted(self, event_name: str) -> bool:
        """This process already posted (or found posted) the Event of that name: it is not posted again. A pass
        that meets the same situation on every look (a foreign Job holding a name) then writes nothing -- a
        pass that wrote is re-run at once, so a post (even one answered AlreadyExists) on every pass is a loop."""
        return event_name in self.events_posted

    def remember_post(self, event_name: str) -> None:
        remember(self.events_posted, event_name, _EVENTS_REMEMBERED)  # the oldest go: one repeated post at most

    @property
    def jobs_namespace(self) -> str:
        return self.job_namespace or self.namespace

    @property
    def job_policy(self) -> JobPolicy:
        return JobPolicy.of(self.job_image, DEFAULT_SERVICE_ACCOUNT, self.job_images, self.job_service_accounts)

    def job_options(self) -> dict[str, Any]:
        """The keyword arguments of jobs.startup_job / jobs.shutdown_job this operator is configured with."""
        return {"namespace": self.jobs_namespace, "image": self.job_image, "allowed_images": self.job_images,
                "allowed_service_accounts": self.job_service_accounts}
