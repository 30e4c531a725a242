"""The runner node on a real control plane: our kubelet for the pods the real scheduler binds to it.

    async with RunnerNode(ExecutorConfig(kubeconfig_path=<the node's kubeconfig>, node_name="lab-runner"),
                          labels={...}) as node:
        ...  # Jobs' pods bound to lab-runner run here as local processes

On the real control plane kube-controller-manager's Job controller creates the pods, the TTL controller and
the garbage collector delete what is done, and kube-scheduler binds the pods; this kubelet does only a
kubelet's part, authenticated as the node (a client certificate `CN=system:node:<name>, O=system:nodes`), so
the Node authorizer and NodeRestriction judge every request as on a real cluster:
- registers its Node (labels, capacity), posts its status (Ready) and renews its Lease in kube-node-lease: the
  lab's one kubelet (node/kubelet.py) does it, on a node that is always up (node/view.AlwaysUp);
- lists and watches only the pods bound to it (node/boundpods.watch_bound: `fieldSelector=spec.nodeName=<name>`,
  which the Node authorizer requires of a node) and runs each Pending one once (kubelet.Kubelet.run_bound:
  volumes, env, the process, its status);
- gives a pod that mounts a ServiceAccount token its own token (TokenRequest bound to the pod, the only kind
  NodeRestriction lets a node ask for) and a kubeconfig carrying it;
- finishes graceful deletions: a pod deleted while it runs is killed, reported Failed, then deleted with a
  grace period of 0.
"""
from __future__ import annotations

import asyncio
import logging
import shutil
import tempfile
from pathlib import Path
from typing import Any

from homecluster_lab.executor import podtoken
from homecluster_lab.executor.config import ExecutorConfig
from homecluster_lab.executor.kubelet import Kubelet, PodCredentials
from homecluster_lab.executor.volumes import mounts_token
from homecluster_lab.node import kubelet as node_kubelet
from homecluster_lab.node import podstatus
from homecluster_lab.node.boundpods import finish_deletion, watch_bound
from homecluster_lab.node.clock import now_rfc3339
from homecluster_lab.node.identity import Identity
from homecluster_lab.node.kube import Kube, KubeError
from homecluster_lab.node.view import AlwaysUp

log = logging.getLogger("homecluster_lab.executor")

RUNNER_LABEL = "lab.homecluster.dev/runner"
RUNNER_CAPACITY = {"cpu": "8", "memory": "16Gi", "pods": "110"}


class RunnerNode:
    """An async context manager; on exit every process it started is killed (its Node is left: the real
    node lifecycle controller marks it NotReady, as it would a switched-off machine)."""

    def __init__(self, cfg: ExecutorConfig, *, labels: dict[str, str] | None = None,
                 capacity: dict[str, str] | None = None, lease_seconds: float = 10.0,
                 status_seconds: float = 30.0):
        if not cfg.node_name:
            raise ValueError("RunnerNode needs ExecutorConfig.node_name: the Node it registers and runs pods for")
        self.cfg = cfg
        self.name = cfg.node_name
        self.identity = Identity(name=self.name, slot=self.name, mac="", node_name=self.name, provider_id="",
                                 labels={RUNNER_LABEL: "true", **(labels or {})},
                                 capacity=dict(capacity or RUNNER_CAPACITY))
        self.lease_seconds, self.status_seconds = lease_seconds, status_seconds
        self._kube = Kube(str(cfg.kubeconfig_path))
        self._own_workdir = cfg.workdir is None
        self.workdir = Path(cfg.workdir) if cfg.workdir else Path(tempfile.mkdtemp(prefix="homecluster-runner-"))
        self.kubelet: Kubelet | None = None  # runs the pods
        self.node: node_kubelet.Kubelet | None = None  # keeps the Node, its status and Lease
        self.runs: dict[str, asyncio.Task] = {}  # pod uid -> its run
        self.seen: set[str] = set()  # uids of pods this node started (never started twice)
        self._tasks: list[asyncio.Task] = []

    # --- lifecycle ----------------------------------------------------------------------------
    async def __aenter__(self) -> "RunnerNode":
        await self._kube.__aenter__()
        try:
            self.kubelet = Kubelet(self._kube, self.cfg, self.workdir)
            self.node = node_kubelet.Kubelet(AlwaysUp(self.identity), self._kube, lease_seconds=self.lease_seconds,
                                             status_seconds=self.status_seconds, retry_seconds=self.lease_seconds,
                                             lease_duration_seconds=int(self.lease_seconds * 4))
            self.node.start()
            await self._wait(self.node.reported, "register its Node and post its status and Lease")
            synced = asyncio.Event()
            self._tasks = [asyncio.create_task(watch_bound(self._kube, self.name, self._resync, self._event,
                                                           synced=synced), name=f"runner {self.name} pods")]
            await self._wait(synced, "list the pods bound to it")
        except BaseException:
            await self.__aexit__(None, None, None)
            raise
        log.info("runner node %s: registered; running the pods bound to it under %s", self.name, self.workdir)
        return self

    async def __aexit__(self, *exc: Any) -> None:
        tasks = self._tasks + list(self.runs.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._tasks, self.runs = [], {}
        if self.node is not None:
            await self.node.stop()
        if self.kubelet is not None:
            await self.kubelet.close()
        await self._kube.__aexit__()
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def log_file(self, namespace: str, pod_name: str) -> Path:
        """Where a pod's container output is kept (as JobExecutor.log_file)."""
        return self.workdir / namespace / pod_name / "container.log"

    async def _wait(self, event: asyncio.Event, what: str, timeout: float = 30) -> None:
        try:
            await asyncio.wait_for(event.wait(), timeout)
        except asyncio.TimeoutError:
            why = self.node.last_error if self.node is not None else None
            raise RuntimeError(f"runner node {self.name}: could not {what} within {timeout:.0f}s "
                               f"(last API error: {why or 'none'}); check the node's kubeconfig "
                               f"{self.cfg.kubeconfig_path} and the API server") from None

    # --- pods -----------------------------------------------------------------------------------
    def _resync(self, items: list[dict[str, Any]], listed_at: float) -> None:
        assert self.kubelet is not None
        present = {(p["metadata"]["namespace"], p["metadata"]["name"]) for p in items}
        for key, handle in list(self.kubelet.handles.items()):
            if key not in present and handle.created_at < listed_at:
                handle.gone.set()
        for pod in items:
            self._consider(pod)

    def _event(self, etype: str, pod: dict[str, Any]) -> None:
        assert self.kubelet is not None
        meta = pod.get("metadata") or {}
        if etype == "DELETED":
            handle = self.kubelet.handles.get((meta.get("namespace"), meta.get("name")))
            if handle is not None:
                handle.gone.set()
            return
        self._consider(pod)

    def _consider(self, pod: dict[str, Any]) -> None:
        assert self.kubelet is not None
        meta = pod["metadata"]
        key, uid = (meta["namespace"], meta["name"]), meta["uid"]
        if meta.get("deletionTimestamp"):
            handle = self.kubelet.handles.get(key)
            if handle is not None:
                handle.gone.set()  # its run kills the process and finishes the deletion
            elif uid not in self.runs:
                self.runs[uid] = asyncio.create_task(self._finish_deletion(pod, None))
            return
        if uid in self.seen or (pod.get("status") or {}).get("phase") not in (None, "Pending"):
            return
        self.seen.add(uid)
        self.runs[uid] = asyncio.create_task(self._run(pod), name=f"pod {key[0]}/{key[1]}")

    async def _run(self, pod: dict[str, Any]) -> None:
        assert self.kubelet is not None
        meta = pod["metadata"]
        key, uid = (meta["namespace"], meta["name"]), meta["uid"]
        try:
            if _wants_token(pod):
                self.kubelet.credentials[key] = await self._credentials_retried(pod)
            result = await self.kubelet.run_bound(pod, _owner_job(pod))
            if result == "gone":
                await self._finish_deletion(pod, 137)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("runner node %s: pod %s/%s could not be run", self.name, *key)
        finally:
            self.kubelet.credentials.pop(key, None)
            self.runs.pop(uid, None)

    async def _finish_deletion(self, pod: dict[str, Any], exit_code: int | None) -> None:
        """The kubelet's end of a graceful deletion (boundpods.finish_deletion), with the final status when a
        process was killed."""
        meta = pod["metadata"]
        ns, name = meta["namespace"], meta["name"]
        now = now_rfc3339()
        try:
            await finish_deletion(self._kube, pod, None if exit_code is None else podstatus.status_terminated(
                pod, now, now, exit_code, reason="Error"))
        except KubeError as exc:
            if exc.status not in (404, 409):
                log.warning("runner node %s: finishing the deletion of pod %s/%s: %s", self.name, ns, name, exc)
        finally:
            self.runs.pop(meta["uid"], None)

    async def _credentials_retried(self, pod: dict[str, Any], attempts: int = 120) -> PodCredentials:
        """_credentials, retried while NodeRestriction does not yet see the pod bound here: its pod cache
        lags the binding ("node requested token bound to a pod scheduled on a different node"), and a real
        kubelet retries its token mount the same way."""
        for attempt in range(attempts):
            try:
                return await self._credentials(pod)
            except KubeError as exc:
                if exc.status != 403 or attempt == attempts - 1:
                    raise
                log.debug("runner node %s: token for pod %s/%s refused (%s); retrying", self.name,
                          pod["metadata"]["namespace"], pod["metadata"]["name"], exc)
            await asyncio.sleep(self.cfg.pending_retry)
        raise AssertionError("unreachable")

    async def _credentials(self, pod: dict[str, Any]) -> PodCredentials:
        """A token of the pod's ServiceAccount bound to the pod (NodeRestriction refuses a node any other
        kind), and a kubeconfig with it, in the pod's folder."""
        ns = pod["metadata"]["namespace"]
        answer = await self._kube.create(f"/api/v1/namespaces/{ns}/serviceaccounts/{podtoken.account(pod)}/token",
                                         podtoken.token_request(pod))
        token = answer["status"]["token"]
        path = self.workdir / ns / pod["metadata"]["name"] / "kubeconfig"
        podtoken.write_kubeconfig(path, Path(self.cfg.kubeconfig_path), token, ns)
        return PodCredentials(token.encode(), path)


def binding_lag(audit_event: dict[str, Any]) -> bool:
    """Whether an audit event of this node's is a refusal it retries: the Node authorizer's graph and
    NodeRestriction's pod cache learn of a pod's binding a moment after it, so a Secret/ConfigMap read or a
    pod-bound token asked for at once may meet a 403 (a real kubelet retries its mounts the same way)."""
    ref = audit_event.get("objectRef") or {}
    return audit_event.get("responseStatus", {}).get("code") == 403 and (
        (audit_event.get("verb") == "get" and ref.get("resource") in ("secrets", "configmaps"))
        or (audit_event.get("verb") == "create" and ref.get("resource") == "serviceaccounts"
            and ref.get("subresource") == "token"))


def _wants_token(pod: dict[str, Any]) -> bool:
    spec = pod["spec"]
    containers = (spec.get("initContainers") or []) + (spec.get("containers") or [])
    return spec.get("automountServiceAccountToken") is not False or any(mounts_token(spec, c) for c in containers)


def _owner_job(pod: dict[str, Any]) -> dict[str, Any]:
    """The pod's owning Job as far as the pod names it (what a command_rewrite hook may look at)."""
    meta = pod["metadata"]
    owner = next((o for o in meta.get("ownerReferences") or [] if o.get("kind") == "Job"), {})
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": owner.get("name", ""), "namespace": meta["namespace"], "uid": owner.get("uid", "")}}
