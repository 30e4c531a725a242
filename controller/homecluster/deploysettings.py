"""The operator's model settings, read from its Deployment: what `homecluster claim` stamps deadlines with.

The operator takes each setting from a flag (`--startup-job-timeout=2m`) or, failing that, from an
environment variable (HOMECLUSTER_STARTUP_JOB_TIMEOUT), and the specification's default otherwise
(operator/main.py). The Deployment that runs it (config/manager/manager.yaml, container "manager")
holds both, so reading it gives the values the operator runs with, without the operator publishing
anything and without the user repeating its flags. Pure: the caller fetches the Deployment.

Only literal values count: an env var filled from a ConfigMap or Secret (valueFrom) is not followed,
and `from_deployment` says so in its notes rather than guessing.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from homecluster.model.settings import Settings

DEPLOYMENT = "homecluster-controller"
CONTAINER = "manager"
ENV_PREFIX = "HOMECLUSTER_"


def _flag_values(args: list[Any]) -> dict[str, str]:
    """`--name=value` and `--name value` pairs of the setting flags, later ones winning (argparse's rule)."""
    wanted = {"--" + name.replace("_", "-"): name for name in Settings.names()}
    out: dict[str, str] = {}
    words = [str(a) for a in args]
    for i, word in enumerate(words):
        flag, eq, value = word.partition("=")
        if flag in wanted:
            if eq:
                out[wanted[flag]] = value
            elif i + 1 < len(words):
                out[wanted[flag]] = words[i + 1]
    return out


def from_deployment(deployment: Mapping[str, Any]) -> tuple[Settings, list[str]]:
    """(settings, notes): the manager container's flags over its literal HOMECLUSTER_* env over the defaults.

    Raises SettingsError (naming the setting) when the Deployment holds a value the operator would refuse too.
    """
    containers = (((deployment.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers") or []
    container = next((c for c in containers if isinstance(c, Mapping) and c.get("name") == CONTAINER), None)
    name = (deployment.get("metadata") or {}).get("name", DEPLOYMENT)
    if container is None:
        return Settings(), [f'deployment "{name}" has no container "{CONTAINER}": the defaults are used']
    notes: list[str] = []
    values: dict[str, str] = {}
    wanted = {ENV_PREFIX + n.upper(): n for n in Settings.names()}
    for env in container.get("env") or []:
        if not isinstance(env, Mapping) or env.get("name") not in wanted:
            continue
        if "value" in env:
            values[wanted[env["name"]]] = str(env["value"])
        else:
            notes.append(f'env {env["name"]} of deployment "{name}" is not a literal value (valueFrom): '
                         f"it is not followed; pass --setting {wanted[env['name']]}=VALUE")
    values.update(_flag_values(list(container.get("args") or [])))
    return Settings.from_mapping(values), notes
