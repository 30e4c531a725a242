"""What every part of a slot pass needs: the client, the store, the settings, the clock, metrics, logs.

One object passed down instead of globals, so tests build one against the lab with a fake clock,
and two operators can run in one process without sharing anything.
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from homecluster import __version__
from homecluster.jobs.manifest import DEFAULT_SERVICE_ACCOUNT
from homecluster.jobs.policy import JobPolicy
from homecluster.metrics import Metrics
from homecluster.model.settings import Settings
from homecluster.kube.client import KubeClient
from homecluster.kube.store import Store

DEFAULT_NAMESPACE = "homecluster-system"
# the runner image `make images` builds and the project publishes: the operator's own version, never latest
DEFAULT_JOB_IMAGE = f"ghcr.io/homecluster-dev/homecluster-runner:{__version__}"
# slot passes at once: a pass mostly waits for the API server, and one slot never runs twice at once
DEFAULT_WORKERS = 64
# core/v1 Events about cluster-scoped objects are stored in this namespace (as kubectl expects)
EVENTS_NAMESPACE = "default"


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

    def now(self) -> datetime:
        return self.clock()

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
