"""What the lab's pool looks like: slot names, each slot's power method, and the API objects it creates.

Pure functions, no I/O: `cluster.py` starts the machines, then asks this module for the Group, the
slots and their credential Secrets built from the machines' endpoints. Keeping the manifests here
lets a test check every field the operator will read without starting anything.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from homecluster import GROUP_VERSION, names

DRIVERS = ("ipmi", "redfish", "wol", "mixed")
DEFAULT_GROUP = "workers"
OPERATOR_NAMESPACE = "homecluster-system"
# What a lab machine carries until its "CNI" is up; the default Group declares it as a readiness taint,
# so every boot shows the readiness gate at work.
READINESS_TAINT = "node.cilium.io/agent-not-ready"
LAB_LABEL = "lab.homecluster.dev/machine"


def slot_names(count: int, prefix: str = "worker") -> list[str]:
    """worker-01 .. worker-NN: zero-padded so that kubectl's sort order is the numeric order."""
    if count < 1:
        raise ValueError(f"--slots {count}: the lab needs at least one slot; use e.g. --slots 3")
    width = max(2, len(str(count)))
    return [f"{prefix}-{i:0{width}d}" for i in range(1, count + 1)]


def method_for(index: int, driver: str) -> str:
    """The power method of the index-th slot: the driver itself, or ipmi/redfish/wol in turn for mixed."""
    if driver not in DRIVERS:
        raise ValueError(f"--driver {driver!r} is not one of {', '.join(DRIVERS)}")
    if driver == "mixed":
        return ("ipmi", "redfish", "wol")[index % 3]
    return driver


def secret_name(slot: str, method: str) -> str:
    """The Secret holding the slot's credentials: `<slot>-bmc` for a BMC, `<slot>-ssh` for a key."""
    return f"{slot}-ssh" if method == "wol" else f"{slot}-bmc"


def namespace(name: str) -> dict[str, Any]:
    # wol power-ons run with hostNetwork, which Pod Security baseline forbids (see docs/job-contract.md)
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "labels": {"pod-security.kubernetes.io/enforce": "privileged"}}}


def group(name: str, size: int, capacity: Mapping[str, str]) -> dict[str, Any]:
    """The lab's one pool. maxNodeProvisionTime is left out, so the boot floor from the settings is the
    budget (short settings give short deadlines)."""
    return {
        "apiVersion": GROUP_VERSION, "kind": names.GROUP_KIND,
        "metadata": {"name": name, "labels": {names.LABEL_MANAGED_BY: "homecluster-lab"}},
        "spec": {
            "minSize": 0, "maxSize": size,
            "ttlSecondsAfterFinished": 600,
            "nodeReadinessTaints": [{"key": READINESS_TAINT, "effect": "NoSchedule"}],
            "template": {
                "labels": {names.LABEL_GROUP: name, "node.kubernetes.io/instance-type": "homecluster-lab"},
                "capacity": dict(capacity),
            },
            "pricing": {"energyPricePerKWh": 0.30},
        },
    }


def slot(name: str, group_name: str, power: Mapping[str, Any],
         boot_check: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A slot whose spec.power (and spec.bootCheck) is what the machine's endpoints say (Endpoints)."""
    spec: dict[str, Any] = {"groupRef": group_name, "powerDrawWatts": 30, "power": dict(power)}
    if boot_check:
        spec["bootCheck"] = dict(boot_check)
    return {
        "apiVersion": GROUP_VERSION, "kind": names.SLOT_KIND,
        "metadata": {"name": name, "labels": {LAB_LABEL: name}},
        "spec": spec,
    }


def secret(name: str, ns: str, data: Mapping[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": name, "namespace": ns, "labels": {names.LABEL_MANAGED_BY: "homecluster-lab"}},
            "stringData": dict(data)}
