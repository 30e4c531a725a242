"""A real cluster-autoscaler driving the lab's pool on the real control plane.

    async with RealLabCluster(LabConfig(control_plane="kubernetes", ...)) as lab:
        async with Autoscaler.for_lab(lab, build) as ca:   # build: autoscaler_builds.discover()[i]
            ca.log_text(), await ca.metrics()

It runs as config/autoscaler ships it: its own ServiceAccount `cluster-autoscaler` bound by
config/autoscaler/rbac.yaml (so the shipped RBAC is what the real authorizer judges), the shipped
Deployment's args with the lab's clocks (autoscaler_flags), and a plaintext cloud-config naming whatever
address the lab's provider reports -- or, when the lab serves the provider over mTLS (LabConfig.provider_tls),
the shipped cloud-config's cert, key, cacert and the Service's name (provider_tls.ProviderTLS). A child process in a session of its own under `setpriv --pdeathsig`
(process.Component), its log in `<workdir>/cluster-autoscaler.log`, ready when `/health-check` answers 200,
stopped when the block ends.
"""
from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp

from homecluster_lab.config import free_port

from . import autoscaler_flags, install
from .autoscaler_builds import Build
from .process import Component

ACCOUNT = "cluster-autoscaler"
RBAC_KINDS = ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")
STATUS_CONFIGMAP = "cluster-autoscaler-status"


def rbac(namespace: str) -> list[dict[str, Any]]:
    """config/autoscaler's ServiceAccount and RBAC (not its Deployment or ConfigMap), moved to `namespace`."""
    objects = [o for o in install.kustomize(install.CONFIG / "autoscaler") if o["kind"] in RBAC_KINDS]
    for obj in objects:
        if obj["metadata"].get("namespace") == install.CONFIG_NAMESPACE:
            obj["metadata"]["namespace"] = namespace
        for subject in obj.get("subjects") or []:
            if subject.get("namespace") == install.CONFIG_NAMESPACE:
                subject["namespace"] = namespace
    return objects


class Autoscaler:
    """One cluster-autoscaler process; see the module docstring."""

    def __init__(self, build: Build, argv: list[str], workdir: Path, metrics_port: int):
        self.build = build
        self.argv = argv
        self.workdir = workdir
        self.metrics_url = f"http://127.0.0.1:{metrics_port}"
        self.log_path = workdir / "cluster-autoscaler.log"
        self.component = Component(f"cluster-autoscaler {build.release}", argv, self.log_path)

    @classmethod
    @contextlib.asynccontextmanager
    async def for_lab(cls, lab: Any, build: Build, *, clocks: autoscaler_flags.Clocks | None = None,
                      shipped: list[str] | None = None, extra: tuple[str, ...] = (),
                      timeout: float = 120.0) -> AsyncIterator["Autoscaler"]:
        """Started against a RealLabCluster `lab` (its provider must serve: the operator or the lab's own)."""
        cp = lab.control_plane
        assert cp is not None and cp.pki is not None, "the autoscaler needs the real control plane"
        namespace = lab.config.namespace
        workdir = lab.workdir / ("cluster-autoscaler-" + re.sub(r"[^\w.]", "_", build.release)[-40:])
        workdir.mkdir(parents=True, exist_ok=True)
        for obj in rbac(namespace):
            await lab.api.create_or_keep(obj)
        kubeconfig = await install.service_account_kubeconfig(
            lab.api, workdir / "kubeconfig", cp.pki, namespace, account=ACCOUNT, seconds=24 * 3600)
        cloud_config = workdir / "cloud-config"
        mtls = getattr(lab, "provider_tls", None)  # the shipped cloud-config's mTLS, by the Service's name
        cloud_config.write_text(mtls.cloud_config(int(lab.provider_address.rsplit(":", 1)[1])) if mtls
                                else autoscaler_flags.cloud_config(lab.provider_address))
        port = free_port("127.0.0.1")
        argv = autoscaler_flags.argv(build.path, cloud_config=cloud_config, kubeconfig=kubeconfig,
                                     namespace=namespace, metrics_port=port,
                                     clocks=clocks or autoscaler_flags.Clocks(), shipped=shipped, extra=extra)
        if mtls:
            argv = mtls.wrap(argv)
        ca = cls(build, argv, workdir, port)
        await ca.component.start()
        try:
            await ca.component.wait_ready(f"{ca.metrics_url}/health-check", timeout, ssl_context=False)
            yield ca
        finally:
            await ca.component.stop()

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def log_tail(self, lines: int = 40) -> str:
        return self.component.log_tail(lines)

    async def metrics(self) -> str:
        """Its Prometheus metrics as text."""
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as session:
            async with session.get(f"{self.metrics_url}/metrics") as answer:
                answer.raise_for_status()
                return await answer.text()

    def exited(self) -> int | None:
        return self.component.exited()
