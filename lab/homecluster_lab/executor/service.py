"""The lab's Job executor: watches batch/v1 Jobs and runs each one's command here, as a kubelet would.

    async with JobExecutor(ExecutorConfig(kubeconfig_path=lab.kubeconfig_path)) as executor:
        ...  # Jobs created now run as local processes; their Pods and status appear in the API

What it does like the cluster: creates the Job's Pods (labelled and owned as the Job controller does),
reports Pod phases Pending -> Running -> Succeeded/Failed with container statuses, writes Job status
(active, ready, succeeded, failed, startTime, completionTime, SuccessCriteriaMet/Complete,
FailureTarget/Failed with BackoffLimitExceeded or DeadlineExceeded), replaces failed pods up to
backoffLimit, kills the process at activeDeadlineSeconds, deletes the Job after ttlSecondsAfterFinished,
and kills the process when the Job or the Pod is deleted.
What it does differently: see layout.py (mounted paths are rewritten in command, args and env), and
the container runs as this user, with this machine's programs (PATH starts with the virtualenv).
"""
from __future__ import annotations

import asyncio
import logging
import shutil
import tempfile
from pathlib import Path
from typing import Any

from homecluster_lab.executor.config import ExecutorConfig
from homecluster_lab.executor.jobcontroller import JobController
from homecluster_lab.executor.kubelet import Kubelet
from homecluster_lab.node.kube import Kube
from homecluster_lab.node.watching import list_and_watch

log = logging.getLogger("homecluster_lab.executor")


def _list_path(namespace: str | None, kind: str) -> str:
    base = "/apis/batch/v1" if kind == "jobs" else "/api/v1"
    return f"{base}/namespaces/{namespace}/{kind}" if namespace else f"{base}/{kind}"


class JobExecutor:
    """An async context manager; on exit every process it started is killed."""

    def __init__(self, cfg: ExecutorConfig):
        self.cfg = cfg
        self._kube = Kube(str(cfg.kubeconfig_path))
        self._own_workdir = cfg.workdir is None
        self.workdir = Path(cfg.workdir) if cfg.workdir else Path(tempfile.mkdtemp(prefix="homecluster-executor-"))
        self.kubelet: Kubelet | None = None
        self.jobs: JobController | None = None
        self._watchers: list[asyncio.Task] = []

    async def __aenter__(self) -> "JobExecutor":
        await self._kube.__aenter__()
        self.kubelet = Kubelet(self._kube, self.cfg, self.workdir)
        self.jobs = JobController(self._kube, self.cfg, self.kubelet)
        pods_synced, jobs_synced = asyncio.Event(), asyncio.Event()
        self._watchers = [
            asyncio.create_task(list_and_watch(self._kube, _list_path(self.cfg.namespace, "pods"),
                                               self._pods_resync, self._pod_event, synced=pods_synced)),
            asyncio.create_task(list_and_watch(self._kube, _list_path(self.cfg.namespace, "jobs"),
                                               self._jobs_resync, self._job_event, synced=jobs_synced)),
        ]
        try:
            await asyncio.wait_for(asyncio.gather(pods_synced.wait(), jobs_synced.wait()), timeout=30)
        except BaseException:
            await self.__aexit__(None, None, None)
            raise
        log.info("job executor: watching Jobs in %s; pods under %s", self.cfg.namespace or "all namespaces",
                 self.workdir)
        return self

    async def __aexit__(self, *exc: Any) -> None:
        for w in self._watchers:
            w.cancel()
        await asyncio.gather(*self._watchers, return_exceptions=True)
        if self.jobs is not None:
            await self.jobs.close()
        if self.kubelet is not None:
            await self.kubelet.close()
        await self._kube.__aexit__()
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def log_file(self, namespace: str, pod_name: str) -> Path:
        """Where a pod's container output is kept."""
        return self.workdir / namespace / pod_name / "container.log"

    # --- watch handlers -----------------------------------------------------------------------
    def _job_event(self, etype: str, job: dict[str, Any]) -> None:
        assert self.jobs is not None
        if etype == "DELETED":
            self.jobs.on_job_gone(job["metadata"]["uid"])
        else:
            self.jobs.on_job(job)

    def _jobs_resync(self, items: list[dict[str, Any]], listed_at: float) -> None:
        assert self.jobs is not None
        present = {j["metadata"]["uid"] for j in items}
        for uid in self.jobs.known_uids() - present:
            self.jobs.on_job_gone(uid)
        for job in items:
            self.jobs.on_job(job)

    def _pod_event(self, etype: str, pod: dict[str, Any]) -> None:
        assert self.kubelet is not None
        meta = pod.get("metadata") or {}
        handle = self.kubelet.handles.get((meta.get("namespace"), meta.get("name")))
        if handle is not None and (etype == "DELETED" or meta.get("deletionTimestamp")):
            handle.gone.set()

    def _pods_resync(self, items: list[dict[str, Any]], listed_at: float) -> None:
        assert self.kubelet is not None
        present = {(p["metadata"].get("namespace"), p["metadata"]["name"]) for p in items}
        for key, handle in list(self.kubelet.handles.items()):
            # a pod created after the list was asked for is simply not in it yet
            if key not in present and handle.created_at < listed_at:
                handle.gone.set()
