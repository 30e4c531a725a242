"""Run one Pod of a Job to its end, as a kubelet would: volumes, env, the process, the Pod's status.

The lab runs the init containers one after the other, then the first container (lifecycle Jobs have one);
sidecars are not run. Init containers report no statuses of their own: their output goes to the pod's one log.
"""
from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import secrets
import string
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from homecluster_lab.executor import podbuild
from homecluster_lab.executor.config import ExecutorConfig, PodRun
from homecluster_lab.executor.envresolve import NotReady, container_env, expand, references
from homecluster_lab.executor.layout import Layout, plan_layout
from homecluster_lab.executor.priority import PodPriority
from homecluster_lab.executor.process import ContainerProcess
from homecluster_lab.executor.volumes import materialise, mounts_token
from homecluster_lab.node import podstatus
from homecluster_lab.node.clock import now_rfc3339
from homecluster_lab.node.kube import Kube, KubeError, core_path, pod_path

log = logging.getLogger("homecluster_lab.executor")
PodResult = Literal["succeeded", "failed", "deadline", "gone"]
_ALPHABET = string.ascii_lowercase + string.digits


@dataclass(frozen=True)
class PodCredentials:
    """A pod's own ServiceAccount token (TokenRequest, bound to the pod) and a kubeconfig carrying it: what a
    container that mounts a token gets on a real control plane, instead of the lab's kubeconfig."""

    token: bytes
    kubeconfig: Path


@dataclass
class PodHandle:
    """A pod this executor runs; `gone` is set when the Pod is deleted from the API."""

    namespace: str
    name: str
    gone: asyncio.Event = field(default_factory=asyncio.Event)
    created_at: float = field(default_factory=time.monotonic)
    process: ContainerProcess | None = None


def _suffix() -> str:
    return "".join(secrets.choice(_ALPHABET) for _ in range(5))


class Kubelet:
    """Runs Pods for the executor; `handles` lets the Pod watch tell a running pod it was deleted."""

    def __init__(self, kube: Kube, cfg: ExecutorConfig, workdir: Path):
        self.kube, self.cfg, self.workdir = kube, cfg, workdir
        self.handles: dict[tuple[str, str], PodHandle] = {}
        self.priority: PodPriority | None = None
        # (namespace, pod) -> its token and kubeconfig, set by the runner node before the pod runs
        self.credentials: dict[tuple[str, str], PodCredentials] = {}

    def _priority(self) -> PodPriority | None:
        """The sweeper for cfg.pod_nice as it is now (a test or benchmark may change it after start)."""
        if self.cfg.pod_nice is None:
            return None
        if self.priority is None:
            self.priority = PodPriority(self.cfg.pod_nice)
        self.priority.nice = self.cfg.pod_nice
        return self.priority

    async def close(self) -> None:
        if self.priority is not None:
            await self.priority.close()

    async def _patch_pod_status(self, ns: str, name: str, status: dict[str, Any]) -> None:
        try:
            await self.kube.merge_patch(pod_path(ns, name, "status"), {"status": status})
        except KubeError as exc:
            if exc.status != 404:
                raise

    async def _post_pod_event(self, pod: dict[str, Any], reason: str, message: str) -> None:
        """A Warning Event on the pod, one per (reason, message), repeated as the kubelet's event recorder
        does: each retry that fails the same way bumps its count and lastTimestamp."""
        meta = pod["metadata"]
        ns, name = meta["namespace"], meta["name"]
        digest = hashlib.sha256(f"{reason}{message}".encode()).hexdigest()[:10]
        now = now_rfc3339()
        body = {"apiVersion": "v1", "kind": "Event",
                "metadata": {"name": f"{name}.{digest}", "namespace": ns},
                "involvedObject": {"apiVersion": "v1", "kind": "Pod", "namespace": ns, "name": name,
                                   "uid": meta.get("uid", "")},
                "type": "Warning", "reason": reason, "message": message, "count": 1,
                "firstTimestamp": now, "lastTimestamp": now, "source": {"component": "kubelet", "host": "lab"}}
        try:
            try:
                await self.kube.create(f"/api/v1/namespaces/{ns}/events", body)
            except KubeError as exc:
                if exc.status != 409:
                    raise
                path = core_path("events", ns, body["metadata"]["name"])
                seen = await self.kube.get(path)
                await self.kube.merge_patch(path, {"count": int(seen.get("count") or 1) + 1, "lastTimestamp": now})
        except KubeError as exc:  # an Event is for people: never a reason to stop the pod's start
            log.warning("pod %s/%s: could not post the %s Event: %s", ns, name, reason, exc)

    async def _fetch(self, ns: str, refs: set[tuple[str, str]]) -> dict[tuple[str, str], dict[str, Any] | None]:
        objects: dict[tuple[str, str], dict[str, Any] | None] = {}
        for kind, name in refs:
            try:
                objects[(kind, name)] = await self.kube.get(core_path(
                    "secrets" if kind == "secret" else "configmaps", ns, name))
            except KubeError as exc:
                # 403: as a node, a kubelet may read a Secret only once the Node authorizer's graph links it
                # to a pod bound to that node, a moment after the binding; like a missing object, retried
                if exc.status not in (403, 404):
                    raise
                objects[(kind, name)] = None
        return objects

    def _process_env(self, pod: dict[str, Any], layout: Layout, env: dict[str, str],
                     container: dict[str, Any] | None = None) -> dict[str, str]:
        cfg = self.cfg
        base = {
            "PATH": f"{cfg.venv_bin}{os.pathsep}{os.environ.get('PATH', '/usr/local/bin:/usr/bin:/bin')}",
            "HOSTNAME": pod["metadata"]["name"],
            "LANG": "C.UTF-8",
            "HOME": str(layout.root),
        }
        if cfg.collections_path:
            base["ANSIBLE_COLLECTIONS_PATH"] = str(cfg.collections_path)
        if cfg.ansible_config:
            base["ANSIBLE_CONFIG"] = str(cfg.ansible_config)
        if "/tmp" in layout.mounts:
            base["TMPDIR"] = str(layout.mounts["/tmp"])
        if pod["spec"].get("automountServiceAccountToken") is not False or (
                container is not None and mounts_token(pod["spec"], container)):
            # No in-cluster config exists here: a pod that may talk to the API server gets a kubeconfig, with
            # its own ServiceAccount token when the runner node issued one, else the lab's.
            own = self.credentials.get((pod["metadata"].get("namespace"), pod["metadata"]["name"]))
            base["KUBECONFIG"] = str(own.kubeconfig if own else cfg.kubeconfig_path)
        base.update(cfg.extra_env)
        base.update({k: layout.substitute(v) for k, v in env.items()})
        return base

    async def run(self, job: dict[str, Any], deadline_at: float | None, on_started,
                  on_created: Callable[[tuple[str, str]], None] | None = None) -> PodResult:
        """Create a Pod for the Job and run it. `on_started()` is awaited once the process runs;
        `on_created((namespace, name))` is called as soon as the Pod exists."""
        ns = job["metadata"]["namespace"]
        name = podbuild.pod_name(job["metadata"]["name"], _suffix())
        pod = await self.kube.create(pod_path(ns), podbuild.pod_for_job(job, name, self.cfg.node_name))
        handle = PodHandle(ns, name)
        self.handles[(ns, name)] = handle
        if on_created is not None:
            on_created((ns, name))
        try:
            return await self._run(job, pod, handle, deadline_at, on_started)
        finally:
            if handle.process is not None and handle.process.proc.returncode is None:
                # cancelled (the Job was deleted) or an error: never leave the process behind
                await asyncio.shield(handle.process.kill(self._grace(pod)))
            self.handles.pop((ns, name), None)

    async def run_bound(self, pod: dict[str, Any], job: dict[str, Any]) -> PodResult:
        """Run a Pod that already exists and is bound to this node (on the real control plane the Job
        controller created it and the scheduler bound it); `job` is its owner, for command_rewrite.
        No deadline here: the Job controller deletes the pod at activeDeadlineSeconds ("gone")."""
        ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        handle = PodHandle(ns, name)
        self.handles[(ns, name)] = handle

        async def started() -> None:
            return None

        try:
            return await self._run(job, pod, handle, None, started)
        finally:
            if handle.process is not None and handle.process.proc.returncode is None:
                await asyncio.shield(handle.process.kill(self._grace(pod)))
            self.handles.pop((ns, name), None)

    def _grace(self, pod: dict[str, Any]) -> float:
        return min(float(pod["spec"].get("terminationGracePeriodSeconds", 30)), self.cfg.kill_grace)

    async def _wait_for(self, handle: PodHandle, deadline_at: float | None, seconds: float | None,
                        task: asyncio.Future | None = None) -> str:
        """Wait for the task, the pod's deletion, the deadline or `seconds`; say which came first."""
        limits = [x for x in (seconds, None if deadline_at is None else deadline_at - time.monotonic())
                  if x is not None]
        timeout = max(0.0, min(limits)) if limits else None
        gone = asyncio.ensure_future(handle.gone.wait())
        waiters = {gone} | ({task} if task else set())
        try:
            done, _ = await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            gone.cancel()
        if task is not None and task in done:
            return "done"
        if gone in done:
            return "gone"
        if deadline_at is not None and time.monotonic() >= deadline_at:
            return "deadline"
        return "timeout"

    async def _run(self, job: dict[str, Any], pod: dict[str, Any], handle: PodHandle, deadline_at: float | None,
                   on_started) -> PodResult:
        ns, name = handle.namespace, handle.name
        spec = pod["spec"]
        container = spec["containers"][0]
        layout = plan_layout(self.workdir / ns / name, spec, container)
        layout.root.mkdir(parents=True, exist_ok=True)
        while True:  # the kubelet keeps trying to mount and configure until the pod is gone
            objects = await self._fetch(ns, references(spec))
            try:
                env = container_env(pod, container, objects)
                own = self.credentials.get((ns, name))
                materialise(layout, pod, objects, token=own.token if own else None)
                break
            except NotReady as nr:
                # a volume's failure is an Event on the pod, as the kubelet posts it; the container only waits
                message = "" if nr.event else str(nr)
                await self._patch_pod_status(ns, name, podstatus.status_waiting(pod, now_rfc3339(), nr.reason,
                                                                               message))
                if nr.event:
                    await self._post_pod_event(pod, nr.event, str(nr))
                why = await self._wait_for(handle, deadline_at, self.cfg.pending_retry)
                if why in ("gone", "deadline"):
                    if why == "deadline":
                        await self.kube.delete(pod_path(ns, name))
                    return why  # type: ignore[return-value]

        for init in spec.get("initContainers") or []:
            outcome = await self._run_init(job, pod, handle, init, objects, deadline_at)
            if outcome != "succeeded":
                return outcome
        proc = await self._start(job, pod, container, layout, env)
        handle.process = proc
        priority = self._priority()
        if priority is not None:
            priority.add(proc.pid)
        try:
            return await self._supervise(pod, handle, proc, deadline_at, on_started)
        finally:
            if priority is not None:
                priority.discard(proc.pid)

    async def _start(self, job: dict[str, Any], pod: dict[str, Any], container: dict[str, Any], layout: Layout,
                     env: dict[str, str]) -> ContainerProcess:
        ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]

        def localise(text: str) -> str:
            return layout.substitute(expand(text, env))

        argv = [localise(x) for x in (container.get("command") or []) + (container.get("args") or [])]
        if not argv:
            raise ValueError(f'pod {ns}/{name}: container "{container["name"]}" has no command; the lab has no '
                             f"image entrypoint to fall back on")
        if self.cfg.command_rewrite:
            argv = self.cfg.command_rewrite(argv, PodRun(job=job, pod=pod, layout=layout, env=env))
        workdir = Path(localise(container["workingDir"])) if container.get("workingDir") else layout.root
        return await ContainerProcess.start(argv, self._process_env(pod, layout, env, container), workdir,
                                            layout.log_file)

    async def _run_init(self, job: dict[str, Any], pod: dict[str, Any], handle: PodHandle, init: dict[str, Any],
                        objects: dict, deadline_at: float | None) -> PodResult:
        """Run one init container to its end: "succeeded" lets the next one (or the main container) start."""
        ns, name = handle.namespace, handle.name
        layout = plan_layout(self.workdir / ns / name, pod["spec"], init)
        proc = await self._start(job, pod, init, layout, container_env(pod, init, objects))
        handle.process = proc
        log.info("pod %s/%s: init container %s started pid %d", ns, name, init["name"], proc.pid)
        exited = asyncio.ensure_future(proc.wait())
        try:
            why = await self._wait_for(handle, deadline_at, None, exited)
        finally:
            if not exited.done():
                exited.cancel()
        if why == "done":
            code = exited.result()
            handle.process = None
            if code == 0:
                return "succeeded"
            started = now_rfc3339()
            await self._patch_pod_status(ns, name, podstatus.status_terminated(
                pod, started, started, code, proc.tail(self.cfg.tail_lines), reason="Init:Error"))
            log.info("pod %s/%s: init container %s exited %d", ns, name, init["name"], code)
            return "failed"
        await proc.kill(self._grace(pod))
        await proc.wait()
        handle.process = None
        if why == "deadline":
            await self.kube.delete(pod_path(ns, name))
            return "deadline"
        return "gone"

    async def _supervise(self, pod: dict[str, Any], handle: PodHandle, proc: ContainerProcess,
                         deadline_at: float | None, on_started) -> PodResult:
        ns, name = handle.namespace, handle.name
        container = pod["spec"]["containers"][0]
        started = now_rfc3339()
        log.info("pod %s/%s: started pid %d", ns, name, proc.pid)
        await self._patch_pod_status(ns, name, podstatus.status_running(pod, started))
        await on_started()

        exited = asyncio.ensure_future(proc.wait())
        try:
            why = await self._wait_for(handle, deadline_at, None, exited)
        finally:
            if not exited.done():
                exited.cancel()
        if why == "done":
            code = exited.result()
            message = ""
            if code != 0 and container.get("terminationMessagePolicy") == "FallbackToLogsOnError":
                message = proc.tail(self.cfg.tail_lines)
            await self._patch_pod_status(ns, name, podstatus.status_terminated(pod, started, now_rfc3339(), code,
                                                                              message))
            log.info("pod %s/%s: exited %d", ns, name, code)
            return "succeeded" if code == 0 else "failed"
        await proc.kill(self._grace(pod))
        code = await proc.wait()
        log.info("pod %s/%s: killed (%s)", ns, name, why)
        if why == "deadline":
            # The Job controller terminates a timed-out Job's pods: final status, then the delete.
            await self._patch_pod_status(ns, name, podstatus.status_terminated(pod, started, now_rfc3339(), code,
                                                                              reason="Error"))
            await self.kube.delete(pod_path(ns, name))
            return "deadline"
        return "gone"
