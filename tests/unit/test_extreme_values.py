"""Every number and duration of the three kinds, at extreme values, through every pure reader: nothing raises.

The fields are found by walking the generated CRD schemas (every integer, number and duration
string, spec and status), so a field added later is covered without touching this file. Values
go up to int64 and to 400-digit durations, beyond the CRD's maxima: an object stored before a
maximum existed is never re-validated, and one such number once wedged a slot's pass
(ttlSecondsAfterFinished: 9000000000000 overflowed a datetime sum) or leaked an IncreaseSize
reservation (maxNodeProvisionTime: "100000000h").

What runs on each drawn set of objects: the pure model (collection, deadlines, attempts,
shutdown counters), the Job builders (startup and shutdown Jobs), and the provider's pure side
(the claim it builds, the NodeGroup list, target size, instances, the template node's protobuf,
the per-group options, node pricing).
"""
from __future__ import annotations

import copy
from datetime import datetime, timedelta, timezone
from typing import Any

from hypothesis import HealthCheck, given, settings as hsettings, strategies as st

from homecluster.api.crd import all_crds
from homecluster_lab.crdcheck.openapi import crd_schema
from homecluster.durations import DURATION_PATTERN
from homecluster.jobs import JobSpecError
from homecluster.jobs.manifest import shutdown_job, startup_job
from homecluster.model import attempts, collection, deadlines, shutdown
from homecluster.model.settings import Settings
from homecluster.provider.actions import ProviderSettings, Scaler
from homecluster.kube.cache import CLAIMS, GROUPS, SLOTS, Cache
from homecluster.provider.options import group_options
from homecluster.provider.pricing import group_hourly_price, node_price
from homecluster.provider.proto import externalgrpc_pb2 as pb
from homecluster.provider.views import Views
from homecluster.provider.writer import build_claim

NOW = datetime(2026, 3, 4, 9, 0, tzinfo=timezone.utc)
STAMP = "2026-03-04T08:50:00Z"
INT64 = 2**63 - 1
KINDS = {"Group": "group", "Node": "slot", "NodeClaim": "claim"}


def _fields(schema: dict, path: tuple = ()) -> list[tuple[tuple, dict]]:
    """(path, schema node) of every integer, number and duration string; "[]" marks a list item."""
    out = []
    if schema.get("type") in ("integer", "number") or (
            schema.get("type") == "string" and schema.get("pattern") == DURATION_PATTERN):
        out.append((path, schema))
    for key, sub in (schema.get("properties") or {}).items():
        if key not in ("apiVersion", "kind", "metadata"):
            out.extend(_fields(sub, path + (key,)))
    if isinstance(schema.get("items"), dict):
        out.extend(_fields(schema["items"], path + ("[]",)))
    return out


FIELDS = [(KINDS[kind], path, node) for kind, crd in sorted(all_crds().items())
          for path, node in _fields(crd_schema(crd))]


def _durations() -> st.SearchStrategy[str]:
    number = st.one_of(st.sampled_from([0, 1, 24, 168, 10**8, 10**18]), st.integers(0, 10**400))
    part = st.builds(lambda n, unit: f"{n}{unit}", number, st.sampled_from(["h", "m", "s", "ms"]))
    return st.lists(part, min_size=1, max_size=3).map("".join)


def _value(node: dict) -> st.SearchStrategy[Any]:
    if node.get("type") == "string":
        return _durations()
    low = node.get("minimum", -INT64 - 1)
    if node["type"] == "integer":
        edges = [low, 0, 1, node.get("maximum", 0), node.get("maximum", 0) + 1, 2**31, 2**53, INT64]
        return st.one_of(st.sampled_from([e for e in edges if low <= e <= INT64]), st.integers(low, INT64))
    edges = [float(low) if low > -INT64 else -1e308, 0.0, float(node.get("maximum", 1)), 1e18, 1e308]
    return st.one_of(st.sampled_from([e for e in edges if e >= low]),
                     st.floats(min_value=max(low, -1e308), max_value=1e308, allow_nan=False, allow_infinity=False))


def _set(obj: dict, path: tuple, value: Any) -> None:
    """obj[path] = value, making the dicts and one-item lists on the way."""
    here: Any = obj
    for i, key in enumerate(path):
        last = i == len(path) - 1
        nxt = path[i + 1] if not last else None
        if key == "[]":
            continue
        if last:
            here[key] = value
            return
        if nxt == "[]":
            items = here.setdefault(key, [])
            if not items:
                items.append({})
            here = items[0]
        else:
            if not isinstance(here.get(key), dict):
                here[key] = {}
            here = here[key]


def _objects():
    group = {"apiVersion": "infra.homecluster.dev/v2alpha1", "kind": "Group",
             "metadata": {"name": "workers", "uid": "g-uid"},
             "spec": {"minSize": 0, "maxSize": 3, "maxNodeProvisionTime": "15m",
                      "template": {"capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"}},
                      "autoscaling": {"scaleDownUnneededTime": "10m", "scaleDownUnreadyTime": "20m",
                                      "scaleDownUtilizationThreshold": 0.5},
                      "pricing": {"energyPricePerKWh": 0.3},
                      "jobs": {"tolerations": [{"key": "k", "operator": "Exists", "effect": "NoExecute",
                                                "tolerationSeconds": 60}]}}}
    slot = {"apiVersion": "infra.homecluster.dev/v2alpha1", "kind": "Node",
            "metadata": {"name": "worker-01", "uid": "s-uid"},
            "spec": {"groupRef": "workers", "powerDrawWatts": 30.0,
                     "power": {"method": "ipmi", "ipmi": {"address": "10.0.0.21", "port": 623,
                                                          "credentialsSecretRef": {"name": "bmc"}}}},
            "status": {"powerState": "on", "claim": "worker-01-abc", "attempt": 1,
                       "lastClaim": {"name": "worker-01-old", "attempt": 2, "phase": "failed",
                                     "reachedReady": False, "finishedAt": STAMP},
                       "shutdown": {"attempts": 1}}}
    claim = {"apiVersion": "infra.homecluster.dev/v2alpha1", "kind": "NodeClaim",
             "metadata": {"name": "worker-01-abc", "uid": "c-uid", "creationTimestamp": STAMP},
             "spec": {"slotRef": "worker-01", "requestedAt": STAMP, "deadlineAt": "2026-03-04T09:10:00Z",
                      "ttlSecondsAfterFinished": 600},
             "status": {"phase": "booting", "attempt": 1, "bootStartedAt": STAMP, "shutdownAttempts": 1}}
    return {"group": group, "slot": slot, "claim": claim}


def _drive(objs: dict) -> None:
    """Every pure reader of these fields, as the operator and the provider call them."""
    group, slot, claim = objs["group"], objs["slot"], objs["claim"]
    settings = Settings()
    claims = [claim] + [copy.deepcopy(claim) for _ in range(3)]
    for variant, phase in zip(claims[1:], ("pending", "ready", "failed")):
        variant["status"]["phase"] = phase
    claims[3]["status"]["finishedAt"] = STAMP
    for c in claims:
        collection.collect_at(c, group, settings)
        collection.collect_at(c, None, settings)
        deadlines.boot_timeout(c, NOW, settings)
        deadlines.next_boot_check(c, settings)
        attempts.attempt_limit_reason(c, settings)
        shutdown.claim_status_fields(shutdown.counter_from_claim(c))
        try:
            startup_job(c, slot, group, settings, namespace="homecluster-system", image="runner:1")
        except JobSpecError as exc:  # a slot boot budget the claim's cannot hold: the refusal the launch reports
            assert "spec.bootCheck.timeout" in str(exc) and "does not fit" in str(exc), exc
        shutdown_job(c, slot, group, settings, force=False, namespace="homecluster-system", image="runner:1")
    shutdown_job(None, slot, group, settings, force=True, namespace="homecluster-system", image="runner:1")
    attempts.seed_attempt(slot["status"].get("lastClaim"))
    shutdown.slot_status_fields(shutdown.counter_from_slot(slot))
    deadlines.deadline_at(NOW, group, settings)
    build_claim(slot, group, NOW, settings)

    cache = Cache()
    cache.replace(GROUPS, [group], synced=True)
    cache.replace(SLOTS, [slot], synced=True)
    cache.replace(CLAIMS, claims[:1], synced=True)
    provider_settings = ProviderSettings(model=settings)
    views = Views(cache, Scaler(cache, None, provider_settings), provider_settings, lambda: NOW)
    views.node_groups().SerializeToString()
    views.target_size("workers")
    views.nodes("workers").SerializeToString()
    views.template("workers").SerializeToString()
    group_options(group, pb.NodeGroupAutoscalingOptions(), settings).SerializeToString()
    group_hourly_price(cache, group)
    node_price(cache, "", "worker-01", {}, NOW, NOW + timedelta(hours=1))


def test_the_walk_finds_the_fields_that_once_wedged_the_operator():
    paths = {(kind, ".".join(path)) for kind, path, _ in FIELDS}
    assert ("claim", "spec.ttlSecondsAfterFinished") in paths
    assert ("group", "spec.maxNodeProvisionTime") in paths
    assert ("group", "spec.maxSize") in paths
    assert ("group", "spec.jobs.tolerations.[].tolerationSeconds") in paths
    assert ("slot", "spec.powerDrawWatts") in paths
    assert len(FIELDS) >= 15


@hsettings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.fixed_dictionaries({i: st.one_of(st.none(), _value(node)) for i, (_, _, node) in enumerate(FIELDS)}))
def test_extreme_numbers_and_durations_never_raise(values):
    objs = _objects()
    for i, value in values.items():
        if value is not None:
            kind, path, _ = FIELDS[i]
            _set(objs[kind], path, value)
    _drive(objs)


@hsettings(max_examples=40, deadline=None)
@given(st.data())
def test_each_field_alone_at_its_extremes(data):
    """One field at a time, so a failure names the field that caused it."""
    for kind, path, node in FIELDS:
        objs = _objects()
        value = data.draw(_value(node), label=f"{kind} {'.'.join(path)}")
        _set(objs[kind], path, value)
        _drive(objs)
