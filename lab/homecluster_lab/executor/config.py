"""The executor's settings: where pods live on disk, what a container's environment starts from."""
from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# lab/homecluster_lab/executor/config.py -> the repository root
REPO_ROOT = Path(__file__).resolve().parents[3]
DEFAULT_COLLECTIONS = REPO_ROOT / "build" / "collections"
# the Ansible configuration the runner image gives every Job (ANSIBLE_CONFIG there), so the lab's Jobs read it too
RUNNER_ANSIBLE_CONFIG = REPO_ROOT / "images" / "runner" / "ansible.cfg"


@dataclass
class PodRun:
    """What a command rewrite hook sees: the Job, the Pod, its local layout and the container env."""

    job: dict[str, Any]
    pod: dict[str, Any]
    layout: Any  # homecluster_lab.executor.layout.Layout
    env: dict[str, str]


CommandRewrite = Callable[[list[str], PodRun], list[str]]


@dataclass
class ExecutorConfig:
    """How the lab runs Jobs. Everything has a default but the kubeconfig."""

    kubeconfig_path: str | Path
    # pods' directories (volumes, logs); a temporary directory when None
    workdir: Path | None = None
    # watch one namespace, or all of them (None)
    namespace: str | None = None
    # spec.nodeName written on the Pods (None leaves it unset)
    node_name: str | None = "homecluster-lab"
    # put first on the container's PATH: the virtualenv that has ansible-runner
    venv_bin: Path = field(default_factory=lambda: Path(sys.executable).parent)
    # ANSIBLE_COLLECTIONS_PATH, so homecluster.infra resolves from the working tree
    collections_path: Path | None = DEFAULT_COLLECTIONS
    # ANSIBLE_CONFIG: the runner image's Ansible settings (None: ansible-core's defaults and search order)
    ansible_config: Path | None = RUNNER_ANSIBLE_CONFIG
    # added to every container's environment (the pod's own env wins)
    extra_env: dict[str, str] = field(default_factory=dict)
    # rewrites the (already localised) command before it runs; for tests
    command_rewrite: CommandRewrite | None = None
    # the nice value every process of a pod runs at, its session's autogroup included (see priority.py):
    # pods yield the CPU to the lab's API server and operator, as they would on a cluster's other machines.
    # None leaves them at the executor's own priority.
    pod_nice: int | None = 10
    # first pause before a failed pod is replaced; doubles, capped at retry_delay_max (the real Job
    # controller starts at 10 s; the lab is impatient)
    retry_delay: float = 1.0
    retry_delay_max: float = 10.0
    # at most this long between SIGTERM and SIGKILL (the pod's terminationGracePeriodSeconds, capped)
    kill_grace: float = 2.0
    # lines of output kept as a failed container's termination message
    tail_lines: int = 20
    # how often a pod waiting for a missing Secret/ConfigMap looks again
    pending_retry: float = 1.0
