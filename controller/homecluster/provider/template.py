"""The template Node a group promises, serialized as Kubernetes protobuf (v1.Node.Marshal()).

Why: cluster-autoscaler asks for it to scale a group up from zero (no live Node to copy). It must
be complete -- capacity and allocatable including `pods` (without it the scheduler fits zero pods),
the group's labels and taints, Ready conditions -- and it must parse: CA decodes the bytes with
the Go core/v1 Node decoder, which fails on an unparsable quantity string. So quantities are
checked here and a bad Group is refused with a message naming the field, never sent as empty or
invalid bytes.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from homecluster.limits import MAX_QUANTITY_LENGTH
from homecluster.model.objects import dig, name_of
from homecluster.names import LABEL_GROUP
from homecluster.provider.errors import precondition
from homecluster.provider.proto import k8s_core_pb2 as core

Obj = Mapping[str, Any]

REQUIRED_CAPACITY = ("cpu", "memory", "pods")
OS_LABEL = "kubernetes.io/os"
# Kubernetes quantity syntax: a signed decimal, then a binary suffix, a decimal SI suffix or an exponent.
# Exponents of at most two digits and texts of at most MAX_QUANTITY_LENGTH characters (homecluster.limits):
# every accepted quantity is a finite float, so pricing never overflows.
_QUANTITY = re.compile(r"^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]{1,2})?$")
_SUFFIX = {"": 1.0, "n": 1e-9, "u": 1e-6, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15,
           "E": 1e18, "Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40, "Pi": 2.0**50, "Ei": 2.0**60}


def quantity_text(value: Any, where: str) -> str:
    """A quantity as Kubernetes text; refuse anything the Go parser would reject."""
    text = str(value).strip() if not isinstance(value, bool) else ""
    if isinstance(value, float) and value.is_integer():
        text = str(int(value))
    if len(text) > MAX_QUANTITY_LENGTH or not _QUANTITY.match(text):
        raise precondition(f"{where}: {str(value)[:64]!r} is not a Kubernetes quantity of at most "
                           f"{MAX_QUANTITY_LENGTH} characters; write e.g. \"4\", \"500m\", \"16Gi\"")
    return text


def quantity_value(text: str) -> float:
    """A quantity's numeric value (cpu in cores, memory in bytes); ValueError for anything quantity_text
    would refuse (so the value is always a finite float)."""
    if len(text) > MAX_QUANTITY_LENGTH or not _QUANTITY.match(text.strip()):
        raise ValueError(f"not a Kubernetes quantity of at most {MAX_QUANTITY_LENGTH} characters: {text[:64]!r}")
    match = re.match(r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(.*)$", text.strip())
    if not match:
        raise ValueError(f"not a quantity: {text!r}")
    number, suffix = float(match.group(1)), match.group(2)
    if suffix[:1] in ("e", "E"):
        return number * 10.0 ** int(suffix[1:])
    return number * _SUFFIX[suffix]


def template_resources(group: Obj) -> tuple[dict[str, str], dict[str, str]]:
    """(capacity, allocatable) of the group's template as quantity texts; allocatable defaults to capacity."""
    name = name_of(group)
    capacity_raw = dig(group, "spec", "template", "capacity", default={}) or {}
    missing = [k for k in REQUIRED_CAPACITY if k not in capacity_raw]
    if missing:
        raise precondition(
            f"Group {name!r} spec.template.capacity lacks {', '.join(missing)}: the autoscaler cannot "
            f"simulate a new node without cpu, memory and pods; add them to the Group")
    capacity = {k: quantity_text(v, f"Group {name!r} spec.template.capacity.{k}") for k, v in capacity_raw.items()}
    allocatable_raw = dig(group, "spec", "template", "allocatable", default=None) or {}
    allocatable = dict(capacity)
    allocatable.update({k: quantity_text(v, f"Group {name!r} spec.template.allocatable.{k}")
                        for k, v in allocatable_raw.items()})
    return capacity, allocatable


def template_node(group: Obj) -> core.Node:
    """The Node a new machine of this group would register as, built from spec.template."""
    name = name_of(group)
    capacity, allocatable = template_resources(group)
    labels = {str(k): str(v) for k, v in (dig(group, "spec", "template", "labels", default={}) or {}).items()}
    labels.setdefault(OS_LABEL, "linux")
    labels[LABEL_GROUP] = name
    gpu_label = dig(group, "spec", "gpu", "label", default="")
    gpu_types = dig(group, "spec", "gpu", "types", default=[]) or []
    if gpu_label and gpu_types and gpu_label not in labels:
        labels[gpu_label] = str(gpu_types[0])
    node = core.Node()
    node.metadata.name = f"template-{name}"
    node.metadata.labels.update(labels)
    for i, taint in enumerate(dig(group, "spec", "template", "taints", default=[]) or []):
        if not taint.get("key") or not taint.get("effect"):
            raise precondition(f"Group {name!r} spec.template.taints[{i}] needs a key and an effect "
                               f"(NoSchedule, PreferNoSchedule or NoExecute)")
        node.spec.taints.add(key=taint["key"], value=str(taint.get("value") or ""), effect=taint["effect"])
    for key, text in capacity.items():
        node.status.capacity[key].string = text
    for key, text in allocatable.items():
        node.status.allocatable[key].string = text
    node.status.phase = "Running"
    node.status.conditions.add(type="Ready", status="True", reason="KubeletReady", message="template node")
    for condition in ("MemoryPressure", "DiskPressure", "PIDPressure", "NetworkUnavailable"):
        node.status.conditions.add(type=condition, status="False")
    return node


def template_bytes(group: Obj) -> bytes:
    """template_node serialized: what goes in fields 1 and 2 of NodeGroupTemplateNodeInfoResponse.

    Deterministic (sorted map keys), so the same Group always yields the same bytes.
    """
    return template_node(group).SerializeToString(deterministic=True)
