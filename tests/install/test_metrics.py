"""The metrics an operator reads: every family is documented and shown, and the new ones record what they claim.

- docs/metrics.md lists every family `homecluster.metrics.Metrics` exports, with its type and its labels,
  and every metric it names exists (so the page and the code cannot drift apart);
- dashboards/homecluster.json has a panel for every family (test_dashboard.py checks the names it uses
  exist; this checks the other direction);
- the provider's wrapper counts each call by method and gRPC status code, on the Metrics object it is
  handed: a real grpc.aio server on 127.0.0.1:<ephemeral> driven by the generated stub (no API server
  is needed: read RPCs answer from the cache, and the one write here is refused before any write);
- boot stage arithmetic (lifecycle.timings) from the clocks the boot monitor reads.
"""
from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone

import grpc
import pytest
from prometheus_client.parser import text_string_to_metric_families

from install_helpers import REPO

from homecluster.lifecycle.timings import boot_times
from homecluster.metrics import COLLECTOR_LABELS, Metrics
from homecluster.kube.cache import CLAIMS, GROUPS, NODES, SLOTS, Cache
from homecluster.provider.proto import externalgrpc_pb2 as pb
from homecluster.provider.proto import externalgrpc_pb2_grpc as pb_grpc
from homecluster.provider.server import ProviderServer

DOC = REPO / "docs" / "metrics.md"
DASHBOARD = REPO / "dashboards" / "homecluster.json"
ROW = re.compile(r"^\|\s*`(homecluster_[a-z_]+)`\s*\|\s*([a-z]+)\s*\|([^|]*)\|", re.M)
EXPORTED_SUFFIX = {"counter": "_total", "histogram": "", "gauge": ""}


def _declared() -> dict[str, tuple[str, set[str]]]:
    """Exported family name (counters with _total, as PromQL sees them) -> (type, label names)."""
    metrics = Metrics()
    labels = {getattr(a, "_name", None): set(getattr(a, "_labelnames", ())) for a in vars(metrics).values()}
    labels.update(COLLECTOR_LABELS)  # the custom collectors' fixed labels
    return {f.name + EXPORTED_SUFFIX[f.type]: (f.type, labels.get(f.name, set()))
            for f in metrics.registry.collect() if f.name.startswith("homecluster_")}  # process_*, python_*: below


def _documented() -> dict[str, tuple[str, set[str]]]:
    out = {}
    for name, kind, label_cell in ROW.findall(DOC.read_text()):
        label_cell = re.sub(r"\([^)]*\)", "", label_cell)  # `kind` (`startup`, `shutdown`): the values
        out[name] = (kind, set(re.findall(r"`([a-z_]+)`", label_cell)))
    return out


def test_docs_list_every_metric_with_its_type_and_labels():
    declared, documented = _declared(), _documented()
    assert set(declared) == set(documented), (
        f"docs/metrics.md misses {sorted(set(declared) - set(documented))}, "
        f"and lists {sorted(set(documented) - set(declared))} which metrics.py does not export")
    for name, (kind, labels) in declared.items():
        assert documented[name] == (kind, labels), f"docs/metrics.md row of {name}: {documented[name]} != {(kind, labels)}"


def test_the_process_and_python_collectors_are_registered():
    """process_* and python_* as every Python exporter has them, on the operator's own registry (so a dashboard
    shows its CPU, memory and restarts), and documented."""
    series = {s.name for f in text_string_to_metric_families(Metrics().render().decode()) for s in f.samples}
    for name in ("process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds",
                 "process_start_time_seconds", "python_gc_objects_collected_total", "python_info"):
        assert name in series, f"{name} is not exported"
    assert "`process_*`, `python_*`" in DOC.read_text()


def test_docs_name_only_exported_series():
    families = {n.removesuffix("_total") for n in _declared()}
    text = DOC.read_text()
    for name in set(re.findall(r"\b(homecluster_[a-z_]+)", text)):
        base = re.sub(r"_(total|bucket|sum|count|created)$", "", name)
        assert base in families or name.startswith("homecluster_claims"), f"docs/metrics.md names {name}: not exported"


def test_the_dashboard_has_a_panel_for_every_family():
    exprs = " ".join(t["expr"] for p in json.loads(DASHBOARD.read_text())["panels"] for t in p.get("targets", []))
    for name in _declared():
        family = name.removesuffix("_total")
        assert re.search(rf"\b{family}(_total|_bucket|_sum|_count)?\b", exprs), f"no dashboard panel shows {family}"


def test_the_docs_say_what_to_alert_on_for_the_new_metrics():
    text = DOC.read_text()
    alerts = text[text.index("## Alerts"):]
    for family in ("homecluster_provider_rpcs_total", "homecluster_boot_seconds", "homecluster_claim_failures_total"):
        assert family in alerts, f"docs/metrics.md has no alert on {family}"


# ---- boot stages ------------------------------------------------------------------------------------------

T0 = datetime(2026, 3, 4, 9, 0, 0, tzinfo=timezone.utc)


def _z(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def test_boot_times_split_the_boot_at_the_clocks_the_monitor_reads():
    view = {"spec": {"requestedAt": _z(T0)},
            "status": {"startupSucceededAt": _z(T0 + timedelta(seconds=40)),
                       "registeredAt": _z(T0 + timedelta(seconds=70))}}
    times = boot_times(view, T0 + timedelta(seconds=100))
    assert (times.total, times.registration, times.gate) == (100.0, 30.0, 30.0)


def test_boot_times_skip_unknown_clocks_and_never_go_negative():
    # a machine that joined before its Job was reported complete: registration 0, not -5
    view = {"spec": {}, "status": {"startupSucceededAt": _z(T0 + timedelta(seconds=5)), "registeredAt": _z(T0),
                                   "bogus": "x"}}
    times = boot_times(view, T0 + timedelta(seconds=3))
    assert (times.total, times.registration, times.gate) == (None, 0.0, 3.0)
    assert boot_times({"spec": {"requestedAt": "not a time"}, "status": {}}, T0).total is None
    # joined and usable before the startup Job was reported complete: no registration wait at all
    early = boot_times({"spec": {}, "status": {"registeredAt": _z(T0)}}, T0 + timedelta(seconds=2))
    assert (early.registration, early.gate) == (0.0, 2.0)
    assert boot_times({"spec": {}, "status": {}}, T0).registration is None  # never joined: nothing to time


def test_record_boot_and_launch_land_on_the_registry():
    metrics = Metrics()
    metrics.record_boot("workers", 100.0, 30.0, None)
    metrics.record_launch("workers", 2)
    metrics.record_launch("workers", 0)  # an unseeded claim is not a launch of attempt 0
    samples = _samples(metrics)
    assert samples[("homecluster_boot_seconds_count", (("group", "workers"),))] == 1
    assert samples[("homecluster_boot_seconds_sum", (("group", "workers"),))] == 100.0
    assert samples[("homecluster_registration_seconds_sum", (("group", "workers"),))] == 30.0
    assert ("homecluster_gate_seconds_count", (("group", "workers"),)) not in samples
    assert samples[("homecluster_launch_attempt_count", (("group", "workers"),))] == 1
    assert samples[("homecluster_launch_attempt_sum", (("group", "workers"),))] == 2


def _samples(metrics: Metrics) -> dict[tuple[str, tuple], float]:
    out = {}
    for family in text_string_to_metric_families(metrics.render().decode()):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


# ---- the provider's wrapper -------------------------------------------------------------------------------

def _group() -> dict:
    return {"apiVersion": "infra.homecluster.dev/v2alpha1", "kind": "Group",
            "metadata": {"name": "workers", "resourceVersion": "1"},
            "spec": {"minSize": 0, "maxSize": 2, "template": {"capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}}


@pytest.fixture
async def provider():
    cache = Cache()
    metrics = Metrics()
    server = ProviderServer(cache, writer=None, address="127.0.0.1:0", insecure=True, metrics=metrics)
    await server.start()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{server.port}")
    try:
        yield cache, metrics, pb_grpc.CloudProviderStub(channel)
    finally:
        await channel.close()
        await server.stop(0)


def _rpc(metrics: Metrics, method: str, code: str) -> float:
    return _samples(metrics).get(("homecluster_provider_rpcs_total", (("code", code), ("method", method))), 0.0)


async def test_the_provider_counts_calls_by_method_and_code_on_the_registry_it_is_handed(provider):
    cache, metrics, stub = provider
    # before the cache is synced: UNAVAILABLE, counted; Cleanup answers anyway
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stub.NodeGroups(pb.NodeGroupsRequest(), timeout=5)
    assert info.value.code() == grpc.StatusCode.UNAVAILABLE
    await stub.Cleanup(pb.CleanupRequest(), timeout=5)
    assert _rpc(metrics, "NodeGroups", "UNAVAILABLE") == 1
    assert _rpc(metrics, "Cleanup", "OK") == 1

    cache.replace(GROUPS, [_group()])
    for kind in (SLOTS, CLAIMS, NODES):
        cache.replace(kind, [])
    for _ in range(3):
        assert [g.id for g in (await stub.NodeGroups(pb.NodeGroupsRequest(), timeout=5)).nodeGroups] == ["workers"]
    assert (await stub.NodeGroupTargetSize(pb.NodeGroupTargetSizeRequest(id="workers"), timeout=5)).targetSize == 0
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stub.NodeGroupTargetSize(pb.NodeGroupTargetSizeRequest(id="nope"), timeout=5)
    assert info.value.code() == grpc.StatusCode.NOT_FOUND
    with pytest.raises(grpc.aio.AioRpcError) as info:  # refused before any write: delta must be > 0
        await stub.NodeGroupIncreaseSize(pb.NodeGroupIncreaseSizeRequest(id="workers", delta=0), timeout=5)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT

    assert _rpc(metrics, "NodeGroups", "OK") == 3
    assert _rpc(metrics, "NodeGroupTargetSize", "OK") == 1
    assert _rpc(metrics, "NodeGroupTargetSize", "NOT_FOUND") == 1
    assert _rpc(metrics, "NodeGroupIncreaseSize", "INVALID_ARGUMENT") == 1
    samples = _samples(metrics)
    assert samples[("homecluster_provider_rpc_seconds_count", (("method", "NodeGroups"),))] == 4
    assert samples[("homecluster_provider_rpc_seconds_count", (("method", "NodeGroupTargetSize"),))] == 2
    # read RPCs answer from memory: well under the 5 ms bucket on any machine that runs this suite
    assert samples[("homecluster_provider_rpc_seconds_sum", (("method", "NodeGroups"),))] < 1.0


def test_a_fresh_metrics_object_starts_from_zero():
    first = Metrics()
    first.record_rpc("NodeGroups", "OK", 0.001)
    assert _rpc(first, "NodeGroups", "OK") == 1
    assert _rpc(Metrics(), "NodeGroups", "OK") == 0
