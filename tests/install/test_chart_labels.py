"""Every object the chart renders carries the app.kubernetes.io labels a newcomer's tools group by (name,
instance, version, managed-by, part-of), with the chart's appVersion; podLabels reach the operator's pod and
leave its selector alone. Rendered by the real helm (skipped until it is built)."""
from __future__ import annotations

import yaml

from helm_chart import CHART, SELF_SIGNED, parse, template

REQUIRED = ("app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/version",
            "app.kubernetes.io/managed-by", "app.kubernetes.io/part-of")
EVERYTHING = ("prometheusRule.enabled=true", "serviceMonitor.enabled=true", "networkPolicy.enabled=true",
              "autoscaler.cloudConfig.enabled=true", "namespace.create=true", "grafanaDashboard.enabled=true")


def test_every_object_has_the_full_label_set_with_the_version():
    version = str(yaml.safe_load((CHART / "Chart.yaml").read_text())["appVersion"])
    for sets in ((), EVERYTHING, (*SELF_SIGNED, *EVERYTHING)):
        for obj in parse(template(*sets)):
            labels = obj["metadata"].get("labels") or {}
            missing = [key for key in REQUIRED if key not in labels]
            assert not missing, f"{obj['kind']} {obj['metadata']['name']} lacks {missing}"
            assert labels["app.kubernetes.io/version"] == version
            assert labels["app.kubernetes.io/instance"] == "homecluster"


def test_pod_labels_reach_the_pod_and_not_the_selector():
    (deployment,) = [o for o in parse(template("podLabels.team=homelab", "podLabels.cost-center=garage"))
                     if o["kind"] == "Deployment"]
    pod = deployment["spec"]["template"]["metadata"]["labels"]
    assert pod["team"] == "homelab" and pod["cost-center"] == "garage"
    assert "team" not in deployment["spec"]["selector"]["matchLabels"]
    assert pod["app.kubernetes.io/version"] == deployment["metadata"]["labels"]["app.kubernetes.io/version"]


def test_the_service_monitor_can_live_in_prometheus_namespace_with_relabelings():
    (monitor,) = [o for o in parse(template(
        "serviceMonitor.enabled=true", "serviceMonitor.namespace=monitoring",
        "serviceMonitor.relabelings[0].targetLabel=cluster", "serviceMonitor.relabelings[0].replacement=home",
        "serviceMonitor.metricRelabelings[0].action=drop",
        "serviceMonitor.metricRelabelings[0].sourceLabels[0]=__name__",
        "serviceMonitor.metricRelabelings[0].regex=python_gc_.*")) if o["kind"] == "ServiceMonitor"]
    assert monitor["metadata"]["namespace"] == "monitoring"
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": ["homecluster-system"]}  # the Service's
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["relabelings"] == [{"targetLabel": "cluster", "replacement": "home"}]
    assert endpoint["metricRelabelings"] == [{"action": "drop", "sourceLabels": ["__name__"], "regex": "python_gc_.*"}]
    (default,) = [o for o in parse(template("serviceMonitor.enabled=true")) if o["kind"] == "ServiceMonitor"]
    assert default["metadata"]["namespace"] == "homecluster-system" and "namespaceSelector" not in default["spec"]


def test_the_crds_carry_the_charts_labels_and_version():
    """crds/ is never templated: make-dist writes the labels Helm cannot, the release's instance aside (one set of
    CRDs serves every release) and managed-by too (Helm creates them once, kubectl upgrades them: no one tool
    manages them, docs/install.md); the version label says whose CRDs a cluster runs (`kubectl get crd -L ...`)."""
    version = str(yaml.safe_load((CHART / "Chart.yaml").read_text())["appVersion"])
    crds = [d for p in sorted((CHART / "crds").glob("*.yaml")) for d in yaml.safe_load_all(p.read_text()) if d]
    assert len(crds) == 3
    for crd in crds:
        assert crd["metadata"]["labels"] == {"app.kubernetes.io/name": "homecluster",
                                             "app.kubernetes.io/part-of": "homecluster",
                                             "app.kubernetes.io/version": version}, crd["metadata"]["name"]
