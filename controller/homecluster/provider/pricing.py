"""Prices for cluster-autoscaler's price expander: energy, not rent.

A home machine costs what it draws: node price = powerDrawWatts / 1000 x energyPricePerKWh x hours
of the window (the predecessor ignored the window; CA asks for a start and an end). A pod's price
is its dominant share (the larger of cpu and memory requests over the group template's
allocatable, capped at 1) of one node of the group it would run in. Pure: objects in, floats out.
"""
from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from homecluster.model.objects import dig, name_of, slot_group
from homecluster.names import LABEL_GROUP
from homecluster.kube.cache import GROUPS, Cache
from homecluster.provider.errors import invalid, not_found
from homecluster.provider.logic import resolve_slot
from homecluster.provider.proto import k8s_core_pb2 as core
from homecluster.limits import MAX_ENERGY_PRICE, MAX_POWER_DRAW_WATTS, clamp_number
from homecluster.provider.template import quantity_value, template_resources

Obj = Mapping[str, Any]


def hours(start: datetime, end: datetime) -> float:
    if end < start:
        raise invalid(f"pricing window ends ({end.isoformat()}) before it starts ({start.isoformat()})")
    return (end - start).total_seconds() / 3600.0


def _kwh_price(group: Obj) -> float:
    return clamp_number(dig(group, "spec", "pricing", "energyPricePerKWh", default=0), MAX_ENERGY_PRICE)


def _watts(slot: Obj) -> float:
    return clamp_number(dig(slot, "spec", "powerDrawWatts", default=0), MAX_POWER_DRAW_WATTS)


def group_hourly_price(cache: Cache, group: Obj) -> float:
    """One typical node of the group for one hour: the mean draw of its slots."""
    slots = cache.slots_of_group(name_of(group))
    mean_watts = sum(_watts(s) for s in slots) / len(slots) if slots else 0.0
    return mean_watts / 1000.0 * _kwh_price(group)


def node_price(cache: Cache, provider_id: str, name: str, labels: Mapping[str, str],
               start: datetime, end: datetime) -> float:
    """A node's price over [start, end]: its slot's draw, or (template nodes) its group's mean draw."""
    window = hours(start, end)
    slot = resolve_slot(cache, provider_id, name)
    if slot is not None:
        group = cache.get(GROUPS, slot_group(slot))
        return _watts(slot) / 1000.0 * _kwh_price(group or {}) * window
    group = cache.get(GROUPS, labels.get(LABEL_GROUP, "")) if labels.get(LABEL_GROUP) else None
    if group is None:
        raise not_found(f"PricingNodePrice: node {name or provider_id!r} is neither a slot's machine nor labelled "
                        f"{LABEL_GROUP} with a known Group, so it has no price")
    return group_hourly_price(cache, group) * window


def pod_requests(pod: core.Pod) -> tuple[float, float]:
    """Sum of the containers' cpu (cores) and memory (bytes) requests."""
    cpu = mem = 0.0
    for i, container in enumerate(pod.spec.containers):
        requests = container.resources.requests
        try:
            if "cpu" in requests:
                cpu += quantity_value(requests["cpu"].string)
            if "memory" in requests:
                mem += quantity_value(requests["memory"].string)
        except ValueError as exc:  # the pod comes from the caller: its fault, named
            raise invalid(f"PricingPodPrice: pod_bytes spec.containers[{i}].resources.requests: {exc}") from None
    return cpu, mem


def _pod_group(cache: Cache, pod: core.Pod) -> Obj | None:
    wanted = pod.spec.nodeSelector.get(LABEL_GROUP)
    if wanted:
        return cache.get(GROUPS, wanted)
    if pod.spec.nodeName:
        slot = resolve_slot(cache, "", pod.spec.nodeName)
        if slot is not None:
            return cache.get(GROUPS, slot_group(slot))
    return None


def pod_price(cache: Cache, pod: core.Pod, start: datetime, end: datetime) -> float:
    """The pod's dominant share of a node of its group; a pod bound to no group takes the cheapest group."""
    window = hours(start, end)
    cpu, mem = pod_requests(pod)
    group = _pod_group(cache, pod)
    candidates = [group] if group is not None else [cache.get(GROUPS, n) for n in cache.group_names()]
    prices = []
    for candidate in candidates:
        if candidate is None:
            continue
        try:
            _, allocatable = template_resources(candidate)
        except Exception:  # a Group without a usable template cannot host the pod; skip it
            continue
        cpu_alloc = quantity_value(allocatable["cpu"]) or 1.0
        mem_alloc = quantity_value(allocatable["memory"]) or 1.0
        share = min(1.0, max(cpu / cpu_alloc, mem / mem_alloc))
        prices.append(share * group_hourly_price(cache, candidate) * window)
    if not prices:
        raise not_found(f"PricingPodPrice: pod {pod.metadata.name!r} fits no Group with a template "
                        "(spec.template.capacity with cpu, memory and pods)")
    return min(prices)
