"""The Job controller's part of the lab: one task per Job, pods replaced up to backoffLimit, the deadline,
status written as the real controller writes it, and the TTL after the Job finished.
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from homecluster_lab.executor import jobstatus
from homecluster_lab.executor.config import ExecutorConfig
from homecluster_lab.executor.kubelet import Kubelet
from homecluster_lab.node.clock import now_rfc3339, parse_rfc3339, seconds_since
from homecluster_lab.node.kube import Kube, KubeError, job_path, pod_path

log = logging.getLogger("homecluster_lab.executor")


class JobController:
    """Starts, runs and forgets Jobs. `on_job` / `on_job_gone` are fed by the Job watch."""

    def __init__(self, kube: Kube, cfg: ExecutorConfig, kubelet: Kubelet):
        self.kube, self.cfg, self.kubelet = kube, cfg, kubelet
        self.runs: dict[str, asyncio.Task] = {}  # Job uid -> its run
        self.ttls: dict[str, asyncio.Task] = {}  # Job uid -> its TTL timer
        self.pods: dict[str, set[tuple[str, str]]] = {}  # Job uid -> pods created for it

    # --- events -------------------------------------------------------------------------------
    def on_job(self, job: dict[str, Any]) -> None:
        uid = job["metadata"]["uid"]
        if job["metadata"].get("deletionTimestamp"):
            self.on_job_gone(uid)
            return
        if uid in self.runs:
            return
        if jobstatus.is_finished(job):
            self._schedule_ttl(job)
        elif not (job.get("spec") or {}).get("suspend"):
            self.runs[uid] = asyncio.create_task(self._run_job(job), name=f"job {job['metadata']['name']}")

    def on_job_gone(self, uid: str) -> None:
        """The Job was deleted: kill its process, and collect its pods (the lab's garbage collector)."""
        task = self.runs.pop(uid, None)
        if task is not None:
            task.cancel()
        ttl = self.ttls.pop(uid, None)
        if ttl is not None:
            ttl.cancel()
        pods = self.pods.pop(uid, set())
        if pods:
            asyncio.create_task(self._delete_pods(pods))

    def known_uids(self) -> set[str]:
        return set(self.runs) | set(self.ttls) | set(self.pods)

    async def close(self) -> None:
        tasks = list(self.runs.values()) + list(self.ttls.values())
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self.runs.clear()
        self.ttls.clear()

    # --- work ---------------------------------------------------------------------------------
    async def _delete_pods(self, pods: set[tuple[str, str]]) -> None:
        for ns, name in pods:
            try:
                await self.kube.delete(pod_path(ns, name))
            except Exception as exc:  # best effort: the API server may collect them itself
                log.debug("deleting pod %s/%s: %s", ns, name, exc)

    async def _status(self, job: dict[str, Any], status: dict[str, Any]) -> None:
        meta = job["metadata"]
        try:
            await self.kube.merge_patch(job_path(meta["namespace"], meta["name"], "status"), {"status": status})
        except KubeError as exc:
            if exc.status != 404:
                raise

    async def _run_job(self, job: dict[str, Any]) -> None:
        meta, uid = job["metadata"], job["metadata"]["uid"]
        try:
            await self._run_job_to_end(job)
            finished = now_rfc3339()
            self.runs.pop(uid, None)
            ttl = (job.get("spec") or {}).get("ttlSecondsAfterFinished")
            if ttl is not None:
                self.ttls[uid] = asyncio.create_task(self._ttl(job, finished, int(ttl)))
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("job %s/%s: the lab could not run it", meta["namespace"], meta["name"])
            self.runs.pop(uid, None)

    async def _run_job_to_end(self, job: dict[str, Any]) -> None:
        status = job.get("status") or {}
        start = status.get("startTime") or now_rfc3339()
        # a Job that already ran (an executor restart) keeps its clock; a new one starts it now
        elapsed = max(0.0, seconds_since(start)) if status.get("startTime") else 0.0
        failed = int(status.get("failed") or 0)
        await self._status(job, {**jobstatus.started(start), "failed": failed})
        deadline = jobstatus.active_deadline(job)
        deadline_at = None if deadline is None else time.monotonic() + deadline - elapsed
        limit, delay = jobstatus.backoff_limit(job), self.cfg.retry_delay
        while True:
            if deadline_at is not None and time.monotonic() >= deadline_at:
                await self._status(job, jobstatus.failed(failed, now_rfc3339(), jobstatus.DEADLINE))
                return

            async def on_started(failed=failed) -> None:
                await self._status(job, jobstatus.pod_active(failed, ready=True))

            result = await self._run_pod(job, deadline_at, on_started)
            if result == "succeeded":
                await self._status(job, jobstatus.succeeded(failed, now_rfc3339()))
                return
            failed += 1
            if result == "deadline":
                await self._status(job, jobstatus.failed(failed, now_rfc3339(), jobstatus.DEADLINE))
                return
            if failed > limit:
                await self._status(job, jobstatus.failed(failed, now_rfc3339(), jobstatus.BACKOFF_LIMIT))
                return
            await self._status(job, jobstatus.pod_failed_retrying(failed))
            pause = delay if deadline_at is None else min(delay, max(0.0, deadline_at - time.monotonic()))
            await asyncio.sleep(pause)
            delay = min(delay * 2, self.cfg.retry_delay_max)

    async def _run_pod(self, job: dict[str, Any], deadline_at: float | None, on_started) -> str:
        created = self.pods.setdefault(job["metadata"]["uid"], set())
        return await self.kubelet.run(job, deadline_at, on_started, on_created=created.add)

    async def _ttl(self, job: dict[str, Any], finished: str, ttl: int) -> None:
        meta = job["metadata"]
        await asyncio.sleep(max(0.0, ttl - seconds_since(finished)))
        log.info("job %s/%s: ttlSecondsAfterFinished passed, deleting it", meta["namespace"], meta["name"])
        await self.kube.delete(job_path(meta["namespace"], meta["name"]), propagation="Background")
        self.ttls.pop(meta["uid"], None)

    def _schedule_ttl(self, job: dict[str, Any]) -> None:
        uid = job["metadata"]["uid"]
        ttl = (job.get("spec") or {}).get("ttlSecondsAfterFinished")
        end = jobstatus.finished_at(job)
        if ttl is None or uid in self.ttls or not end:
            return
        parse_rfc3339(end)  # a malformed time is an error here, not a silent never-delete
        self.ttls[uid] = asyncio.create_task(self._ttl(job, end, int(ttl)))
