"""How the lab runs cluster-autoscaler: the flags config/autoscaler ships, with the lab's clocks. Pure, no I/O
but reading config/autoscaler/deployment.yaml.

The lab starts from the shipped Deployment's args, so what the lab proves is what a user deploys (the
`--startup-taint` flags above all: without them the autoscaler buys a machine too many, docs/autoscaler.md).
It replaces only what cannot hold outside a pod (the cloud-config's path, the namespace from the pod's
environment) and the clocks, which are minutes for machines that boot and seconds in the lab.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .binaries import REPO

DEPLOYMENT = REPO / "config" / "autoscaler" / "deployment.yaml"
STARTUP_TAINT = "--startup-taint"


@dataclass(frozen=True)
class Clocks:
    """The lab's clocks (seconds): short, so a scale-up and a scale-down each take tens of seconds."""

    scan_interval: float = 2.0
    unneeded: float = 10.0
    delay_after_add: float = 10.0
    delay_after_delete: float = 0.0
    delay_after_failure: float = 5.0
    max_node_provision: float = 900.0  # the lab's boot floor, so the autoscaler never gives up before a claim
    initial_backoff: float = 60.0


def shipped_args(deployment: Path = DEPLOYMENT) -> list[str]:
    """The cluster-autoscaler container's args in config/autoscaler's Deployment."""
    doc = yaml.safe_load(deployment.read_text())
    containers = doc["spec"]["template"]["spec"]["containers"]
    container: dict[str, Any] = next(c for c in containers if c["name"] == "cluster-autoscaler")
    return [str(a) for a in container.get("args") or []]


def startup_taints(args: list[str]) -> list[str]:
    """The keys the args name with --startup-taint."""
    return [a.split("=", 1)[1] for a in args if a.startswith(STARTUP_TAINT + "=")]


def _secs(value: float) -> str:
    return f"{value:g}s"


def argv(binary: Path, *, cloud_config: Path, kubeconfig: Path, namespace: str, metrics_port: int,
         clocks: Clocks, shipped: list[str] | None = None, extra: tuple[str, ...] = ()) -> list[str]:
    """The command line: the shipped args with the lab's files, namespace and clocks in place of theirs."""
    lab = {
        "--cloud-config": str(cloud_config),
        "--kubeconfig": str(kubeconfig),
        "--namespace": namespace,
        "--leader-elect": "false",
        "--address": f"127.0.0.1:{metrics_port}",
        "--scan-interval": _secs(clocks.scan_interval),
        "--scale-down-unneeded-time": _secs(clocks.unneeded),
        "--scale-down-delay-after-add": _secs(clocks.delay_after_add),
        "--scale-down-delay-after-delete": _secs(clocks.delay_after_delete),
        "--scale-down-delay-after-failure": _secs(clocks.delay_after_failure),
        "--max-node-provision-time": _secs(clocks.max_node_provision),
        "--initial-node-group-backoff-duration": _secs(clocks.initial_backoff),
        "--v": "4",
    }
    kept = [a for a in (shipped_args() if shipped is None else shipped) if a.split("=", 1)[0] not in lab]
    return [str(binary), *kept, *(f"{k}={v}" for k, v in lab.items()), *extra]


def cloud_config(provider_address: str, grpc_timeout: str = "10s") -> str:
    """The lab's cloud-config: plaintext on loopback (the lab's provider runs with --provider-insecure)."""
    return f"address: {provider_address}\ngrpc_timeout: {grpc_timeout}\n"
