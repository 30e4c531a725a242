"""Flux's source-controller and kustomize-controller as processes of the lab, on the real control plane.

    async with FluxControllers(api, pki, workdir) as flux:   # after the control plane is up
        await flux.own_pool(git_url, path="./pool")          # a GitRepository + Kustomization in flux-system

Installed as their upstream manifests give them (copied out of the pinned modules by `make flux`,
binaries.flux_manifests()): the CRDs of config/crd/bases, the RBAC of config/rbac -- each controller's
ClusterRole and leader-election Role, and kustomize-controller's `cluster-reconciler` binding to
cluster-admin -- bound to a ServiceAccount per controller in flux-system (upstream binds `default` in a
namespace called `system`, which flux2's install renames the same way). Each controller runs with a
TokenRequest token of its own ServiceAccount, so every request passes the real RBAC authorizer.
source-controller serves its artifacts on loopback (--storage-adv-addr), where kustomize-controller
fetches them. Logs: <workdir>/logs/<controller>.log (JSON lines).
"""
from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from homecluster_lab import yamlfiles
from homecluster_lab.config import LabError, free_port
from homecluster_lab.executor.kube import KubeError

from .. import binaries, install, pki
from ..process import Component, StartStop
from ..realapi import RealApi

NAMESPACE = "flux-system"
HOST = "127.0.0.1"
SOURCE, KUSTOMIZE = "source-controller", "kustomize-controller"
SOURCE_API = "/apis/source.toolkit.fluxcd.io/v1"
KUSTOMIZE_API = "/apis/kustomize.toolkit.fluxcd.io/v1"
POOL = "pool"  # the GitRepository and the Kustomization that own the pool
INTERVAL = "10s"
UPSTREAM_ACCOUNT = ("default", "system")  # the subject config/rbac binds, renamed per controller


def rbac_objects(controller: str) -> list[dict[str, Any]]:
    """config/rbac of `controller`'s module (kustomized), its subjects moved to flux-system/<controller>."""
    short = controller.split("-")[0]
    objects = install.kustomize(binaries.flux_manifests() / f"{short}-rbac")
    for obj in objects:
        if obj["kind"] in ("Role", "RoleBinding"):
            obj["metadata"]["namespace"] = NAMESPACE
        for subject in obj.get("subjects") or []:
            if (subject.get("name"), subject.get("namespace")) == UPSTREAM_ACCOUNT:
                subject.update(name=controller, namespace=NAMESPACE)
    return objects


def crds() -> list[dict[str, Any]]:
    folder = binaries.flux_manifests()
    return yamlfiles.custom_resource_definitions(
        sorted([*folder.glob("source-crds/*.yaml"), *folder.glob("kustomize-crds/*.yaml")]))


def git_repository(url: str, interval: str = INTERVAL) -> dict[str, Any]:
    return {"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
            "metadata": {"name": POOL, "namespace": NAMESPACE},
            "spec": {"url": url, "interval": interval, "timeout": "20s", "ref": {"branch": "main"}}}


def kustomization(path: str, interval: str = INTERVAL) -> dict[str, Any]:
    """Server-side apply is how kustomize-controller v1 always applies; prune deletes what Git dropped."""
    return {"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
            "metadata": {"name": POOL, "namespace": NAMESPACE},
            "spec": {"interval": interval, "retryInterval": interval, "timeout": "30s", "path": path,
                     "prune": True, "sourceRef": {"kind": "GitRepository", "name": POOL}}}


class FluxControllers(StartStop):
    def __init__(self, api: RealApi, cp_pki: pki.Pki, workdir: Path) -> None:
        self.api, self.pki, self.workdir = api, cp_pki, Path(workdir)
        self.components: dict[str, Component] = {}
        self.storage_port = 0

    async def start(self, timeout: float = 120) -> None:
        reason = binaries.flux_missing_reason()
        if reason:
            raise LabError(reason)
        self.workdir.mkdir(parents=True, exist_ok=True)
        await self.api.create_or_keep({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
        for crd in crds():
            await self.api.create_or_keep(crd)
        for controller in (SOURCE, KUSTOMIZE):
            await self.api.create_or_keep({"apiVersion": "v1", "kind": "ServiceAccount",
                                           "metadata": {"name": controller, "namespace": NAMESPACE}})
            for obj in rbac_objects(controller):
                await self.api.create_or_keep(obj)
        await _served(self.api, [f"{SOURCE_API}/gitrepositories", f"{KUSTOMIZE_API}/kustomizations"], timeout)
        (self.workdir / "storage").mkdir(exist_ok=True)  # source-controller refuses a storage path that is not there
        self.storage_port = free_port(HOST)
        storage = f"{HOST}:{self.storage_port}"
        await self._run(SOURCE, [f"--storage-path={self.workdir / 'storage'}", f"--storage-addr={storage}",
                                 f"--storage-adv-addr={storage}"], timeout)
        await self._run(KUSTOMIZE, ["--no-remote-bases=true"], timeout)

    async def _run(self, controller: str, extra: list[str], timeout: float) -> None:
        kubeconfig = await install.service_account_kubeconfig(
            self.api, self.workdir / f"{controller}.kubeconfig", self.pki, NAMESPACE, account=controller)
        health = free_port(HOST)
        argv = ["env", f"KUBECONFIG={kubeconfig}", f"RUNTIME_NAMESPACE={NAMESPACE}", f"TMPDIR={self.workdir}",
                str(binaries.flux_bin_dir() / controller), "--watch-all-namespaces=true", "--log-level=info",
                "--log-encoding=json", f"--metrics-addr={HOST}:{free_port(HOST)}", f"--health-addr={HOST}:{health}",
                *extra]
        component = Component(controller, argv, self.log_path(controller))
        self.components[controller] = component
        await component.start()
        await component.wait_ready(f"http://{HOST}:{health}/readyz", timeout, False)

    def log_path(self, controller: str) -> Path:
        return self.workdir / "logs" / f"{controller}.log"

    async def stop(self) -> None:
        for name in (KUSTOMIZE, SOURCE):
            component = self.components.pop(name, None)
            if component is not None:
                await component.stop()

    async def own_pool(self, url: str, path: str = "./pool", interval: str = INTERVAL) -> None:
        """The GitRepository of `url` and a Kustomization of `path` in it: Flux owns the pool from now on."""
        await _create_or_keep(self.api, f"{SOURCE_API}/namespaces/{NAMESPACE}/gitrepositories",
                              git_repository(url, interval))
        await _create_or_keep(self.api, f"{KUSTOMIZE_API}/namespaces/{NAMESPACE}/kustomizations",
                              kustomization(path, interval))

    async def kustomization(self) -> dict[str, Any]:
        return await self.api.kube.get(f"{KUSTOMIZE_API}/namespaces/{NAMESPACE}/kustomizations/{POOL}")

    async def applied(self, revision: str, timeout: float = 120) -> dict[str, Any]:
        """Until the Kustomization is Ready with Git's `revision` applied: its status. LabError after `timeout`
        s, with the Kustomization's last condition and the controllers' last log lines."""
        deadline = time.monotonic() + timeout
        while True:
            status = (await self.kustomization()).get("status") or {}
            if applied_revision(status) == revision and ready(status):
                return status
            if time.monotonic() > deadline:
                raise LabError(f"Flux did not apply {revision[:12]} within {timeout:g}s; Kustomization "
                               f"{NAMESPACE}/{POOL} status: {status.get('conditions')}; {self.log_tails()}")
            await asyncio.sleep(0.2)

    def log_tails(self, lines: int = 5) -> str:
        return "; ".join(f"{n} log: {c.log_tail(lines)}" for n, c in self.components.items())


def applied_revision(status: dict[str, Any]) -> str:
    """The Git commit of `status.lastAppliedRevision` ("main@sha1:<hex>")."""
    return (status.get("lastAppliedRevision") or "").rpartition(":")[2]


def ready(status: dict[str, Any]) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])


async def _create_or_keep(api: RealApi, path: str, obj: dict[str, Any]) -> None:
    try:
        await api.kube.create(path, obj)
    except KubeError as exc:
        if exc.status != 409:
            raise


async def _served(api: RealApi, paths: list[str], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    for path in paths:
        while True:
            try:
                await api.kube.get(path)
                break
            except KubeError as exc:
                if time.monotonic() > deadline:
                    raise LabError(f"Flux's CRD for {path} was not served within {timeout:g}s: {exc}") from None
            await asyncio.sleep(0.1)
