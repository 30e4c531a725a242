"""dashboards/homecluster.json only queries series that homecluster.metrics exports, with their labels."""
from __future__ import annotations

import json
import re

import pytest

from install_helpers import REPO

DASHBOARD = REPO / "dashboards" / "homecluster.json"
SUFFIXES = {"counter": ("_total", "_created"), "histogram": ("_bucket", "_sum", "_count", "_created"),
            "gauge": ("",)}
METRIC = re.compile(r"\b(homecluster_[a-z_]+)(\{[^}]*\})?")
BY = re.compile(r"\b(?:by|without)\s*\(([^)]*)\)")


def _families():
    """Family name -> (type, label names), from a fresh Metrics() (no samples exist yet, so the label
    names come from each metric's definition; the claims gauge is a custom collector whose labels are
    fixed in metrics.py)."""
    from homecluster.metrics import COLLECTOR_LABELS, Metrics
    metrics = Metrics()
    declared = {getattr(a, "_name", None): set(getattr(a, "_labelnames", ())) for a in vars(metrics).values()}
    declared.update(COLLECTOR_LABELS)  # the custom collectors' fixed labels
    return {f.name: (f.type, declared.get(f.name, set())) for f in metrics.registry.collect()}


def _series(families):
    """Exported series name -> (family, label names)."""
    out = {}
    for name, (kind, labels) in families.items():
        for suffix in SUFFIXES[kind]:
            out[name + suffix] = (name, labels | ({"le"} if suffix == "_bucket" else set()))
    return out


def _exprs(dashboard):
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            yield panel["title"], target["expr"]
    for var in dashboard["templating"]["list"]:
        query = var.get("query")
        if isinstance(query, dict):
            yield f"variable {var['name']}", query["query"]


@pytest.fixture(scope="module")
def dashboard():
    return json.loads(DASHBOARD.read_text())


def test_every_metric_in_the_dashboard_is_exported(dashboard):
    series = _series(_families())
    used = set()
    for title, expr in _exprs(dashboard):
        for name, selector in METRIC.findall(expr):
            assert name in series, f"panel {title!r} queries {name}, which homecluster/metrics.py does not export"
            used.add(series[name][0])
            labels = series[name][1]
            for key in re.findall(r"(\w+)\s*(?:=~|!~|!=|=)", selector or ""):
                assert key in labels, f"panel {title!r}: {name} has no label {key!r} (it has {sorted(labels)})"
        names = {series[n][0] for n, _ in METRIC.findall(expr)}
        allowed = set().union(*(series[n][1] for n, _ in METRIC.findall(expr)))
        for group in BY.findall(expr):
            for label in (s.strip() for s in group.split(",") if s.strip()):
                assert label in allowed, f"panel {title!r} groups by {label!r}, not a label of {sorted(names)}"
    assert used, "the dashboard queries nothing"


def test_the_dashboard_shows_what_an_operator_needs(dashboard):
    exprs = " ".join(e for _, e in _exprs(dashboard))
    for family in ("homecluster_claims", "homecluster_claim_transitions", "homecluster_claim_failures",
                   "homecluster_job_duration_seconds", "homecluster_reconcile_errors"):
        assert family in exprs, f"no panel shows {family}"


def test_the_checker_catches_a_wrong_name_and_a_wrong_label():
    series = _series(_families())
    assert "homecluster_claim_failures_total" in series and "homecluster_claim_failure_total" not in series
    assert "reason" in series["homecluster_claim_failures_total"][1]
    assert "group" not in series["homecluster_claim_failures_total"][1]


def test_panels_are_well_formed(dashboard):
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    for p in dashboard["panels"]:
        g = p["gridPos"]
        assert 0 <= g["x"] and g["x"] + g["w"] <= 24, p["title"]
        if p["type"] != "row":
            assert p["datasource"]["uid"] == "${datasource}" and p["targets"], p["title"]


def test_the_pool_variable_lists_a_pool_with_no_claims(dashboard):
    """The Pool picker reads its values from a series every pool's slots export at every scrape: a pool whose
    machines all sit off, with no claim, is still there to pick (homecluster_claims has no such series)."""
    from prometheus_client.parser import text_string_to_metric_families
    from prometheus_client import generate_latest
    from homecluster.metrics import Metrics
    (variable,) = [v for v in dashboard["templating"]["list"] if v["name"] == "group"]
    metric, label = re.fullmatch(r"label_values\((\w+), (\w+)\)", variable["query"]["query"]).groups()
    assert variable["definition"] == variable["query"]["query"]
    metrics = Metrics()
    metrics.watch_claims(lambda: [("ready", "busy-pool")])
    metrics.watch_slots(lambda: [("m1", "busy-pool", "ready", "on"), ("m2", "idle-pool", "off", "off")])
    exposition = generate_latest(metrics.registry).decode()
    values = {s.labels[label] for f in text_string_to_metric_families(exposition) for s in f.samples
              if s.name == metric}
    assert values == {"busy-pool", "idle-pool"}, f"the Pool variable ({metric}) offers only {sorted(values)}"
