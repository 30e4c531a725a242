"""charts/homecluster against the kustomize tree: the same objects, the same rules, no drift.

config/ is the reviewed source (tests/install/test_rbac.py, test_tls_wiring.py, ... check it); the chart
must render the same objects from its default values, with cert-manager (config/default), self-signed
(config/default-no-certmanager), and with your own Secrets (config/default plus the make-certs.py caBundle),
and its toggles the same objects as config/prometheus, config/autoscaler and the components under
config/components (prometheus-rule, aggregated-roles, network-policy; aggregated-roles is on by default, so
the default rendering is config/default plus that component). Labels are the one allowed difference (Helm's
own). Skipped, saying how to build it, when `make k8s` has not built helm.
"""
from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from helm_chart import CHART, FAKE_CA, NAMESPACE, NO_CERT_MANAGER, SELF_SIGNED, helm, parse, template
from install_helpers import CONFIG, render

Key = tuple[str, str, str]
# chart value -> the kustomize component it renders; the chart's default for each
TOGGLES = {"prometheusRule.enabled": "prometheus-rule", "aggregatedRoles.enabled": "aggregated-roles",
           "networkPolicy.enabled": "network-policy"}
DEFAULTS = {"prometheusRule.enabled": False, "aggregatedRoles.enabled": True, "networkPolicy.enabled": False}


def _component(tmp: Path, name: str, namespace: str = NAMESPACE) -> list[dict[str, Any]]:
    """The objects config/components/<name> adds to an install in `namespace` (a Kustomization holding
    only that component, as a user's copy of config/default would add it)."""
    here = tmp / f"{name}-{namespace}"
    here.mkdir()
    (here / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "namespace": namespace,
        "components": [f"{os.path.relpath(CONFIG, here)}/components/{name}"]}))
    return render(here)


def _toggles_off(*keep: str) -> tuple[str, ...]:
    """--set items that turn every toggle off but `keep` (on)."""
    return tuple(f"{value}={'true' if value in keep else 'false'}" for value in TOGGLES)


def _key(obj: dict[str, Any]) -> Key:
    return obj["kind"], obj["metadata"]["name"], obj["metadata"].get("namespace", "")


def _comparable(obj: dict[str, Any]) -> dict[str, Any]:
    """The object without labels (Helm's chart/instance labels, kustomize's part-of)."""
    obj = copy.deepcopy(obj)
    obj["metadata"].pop("labels", None)
    if obj["kind"] == "Deployment":
        obj["spec"]["template"]["metadata"].pop("labels", None)
    return obj


def _by_key(objects: list[dict[str, Any]]) -> dict[Key, dict[str, Any]]:
    return {_key(o): _comparable(o) for o in objects}


def _assert_same(chart: list[dict[str, Any]], kustomize: list[dict[str, Any]]) -> None:
    mine, theirs = _by_key(chart), _by_key(kustomize)
    assert sorted(mine) == sorted(theirs), (
        f"only in the chart: {sorted(mine.keys() - theirs.keys())}; "
        f"only in config/: {sorted(theirs.keys() - mine.keys())}")
    for key in sorted(mine):
        assert mine[key] == theirs[key], f"{key} differs between the chart and config/"


def test_lint_with_and_without_cert_manager():
    for sets in ((), NO_CERT_MANAGER, SELF_SIGNED, _toggles_off(*TOGGLES)):
        argv = ["lint", "--strict", str(CHART)] + [a for s in sets for a in ("--set", s)]
        done = helm(*argv)
        assert done.returncode == 0, f"helm lint {sets}: {done.stdout}{done.stderr}"


def test_default_values_render_config_default_and_the_aggregated_roles(default_objects, tmp_path):
    rendered = parse(template("namespace.create=true", include_crds=True))
    _assert_same(rendered, default_objects + _component(tmp_path, "aggregated-roles"))


def test_defaults_of_the_component_toggles():
    """prometheusRule and networkPolicy off (they need the Prometheus Operator's CRDs, an enforcing CNI),
    aggregatedRoles on (values.yaml says why); turning the roles off removes them and nothing else."""
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert {v: values[v.split(".")[0]]["enabled"] for v in TOGGLES} == DEFAULTS
    default = {_key(o) for o in parse(template())}
    assert not {k for k in default if k[0] in ("PrometheusRule", "NetworkPolicy")}
    without_roles = {_key(o) for o in parse(template("aggregatedRoles.enabled=false"))}
    assert default - without_roles == {("ClusterRole", "homecluster-view", ""), ("ClusterRole", "homecluster-edit", "")}
    assert without_roles <= default


@pytest.mark.parametrize("value", sorted(TOGGLES))
@pytest.mark.parametrize("namespace", [NAMESPACE, "ops"])
def test_each_toggle_renders_its_component(value, namespace, tmp_path):
    """Each toggle alone adds exactly its component's objects, in the release's namespace."""
    base = {_key(o) for o in parse(template(*_toggles_off(), namespace=namespace))}
    rendered = parse(template(*_toggles_off(value), namespace=namespace))
    added = [o for o in rendered if _key(o) not in base]
    _assert_same(added, _component(tmp_path, TOGGLES[value], namespace))


def test_the_network_policy_selects_the_charts_operator_pod():
    rendered = parse(template("networkPolicy.enabled=true"))
    [policy] = [o for o in rendered if o["kind"] == "NetworkPolicy"]
    [deployment] = [o for o in rendered if o["kind"] == "Deployment"]
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= pod_labels.items()
    assert policy["metadata"]["namespace"] == deployment["metadata"]["namespace"]


def test_prometheus_rule_labels_reach_the_rule():
    rendered = parse(template("prometheusRule.enabled=true", "prometheusRule.labels.release=kube-prometheus"))
    [rule] = [o for o in rendered if o["kind"] == "PrometheusRule"]
    assert rule["metadata"]["labels"]["release"] == "kube-prometheus"


def test_self_signed_renders_config_default_no_certmanager(tmp_path):
    rendered = parse(template("namespace.create=true", *SELF_SIGNED, include_crds=True))
    _assert_same(rendered, render(CONFIG / "default-no-certmanager") + _component(tmp_path, "aggregated-roles"))


def test_own_secrets_render_config_default_without_cert_manager_and_with_the_ca_bundle(default_objects, tmp_path):
    rendered = parse(template("namespace.create=true", *NO_CERT_MANAGER, include_crds=True))
    expected = []
    for obj in copy.deepcopy(default_objects):
        if obj["apiVersion"].startswith("cert-manager.io"):
            continue
        if obj["kind"] == "ValidatingWebhookConfiguration":
            obj["metadata"].pop("annotations")
            for hook in obj["webhooks"]:
                hook["clientConfig"]["caBundle"] = FAKE_CA
        expected.append(obj)
    _assert_same(rendered, expected + _component(tmp_path, "aggregated-roles"))


def test_an_unknown_certificates_mode_fails_naming_the_choices():
    done = helm("template", "homecluster", str(CHART), "--set", "certificates.mode=vault")
    assert done.returncode != 0
    assert "certificates.mode must be cert-manager, self-signed or secrets" in done.stderr, done.stderr


def test_the_old_cert_manager_switch_fails_naming_its_replacement():
    """certManager.enabled=false meant "own Secrets"; read silently it would turn cert-manager on at upgrade."""
    for value in ("false", "true"):
        done = helm("template", "homecluster", str(CHART), "--set", f"certManager.enabled={value}",
                    "--set", f"webhook.caBundle={FAKE_CA}")
        assert done.returncode != 0
        assert "certManager.enabled was replaced by certificates.mode" in done.stderr
        assert "certificates.mode=secrets" in done.stderr


def test_toggles_render_config_prometheus_and_the_autoscaler_cloud_config(autoscaler_objects):
    rendered = parse(template("serviceMonitor.enabled=true", "autoscaler.cloudConfig.enabled=true"))
    extra = [o for o in rendered if o["kind"] in ("ServiceMonitor", "ConfigMap")]
    cloud_config = [o for o in autoscaler_objects if o["kind"] == "ConfigMap"]
    _assert_same(extra, render(CONFIG / "prometheus") + cloud_config)


def test_without_cert_manager_and_without_ca_bundle_fails_saying_what_to_set():
    done = helm("template", "homecluster", str(CHART), "--set", "certificates.mode=secrets")
    assert done.returncode != 0
    assert "webhook.caBundle" in done.stderr and "homecluster-webhook-cert" in done.stderr, done.stderr


@pytest.mark.parametrize("namespace", ["ops"])
def test_another_namespace_moves_every_name_that_carries_it(namespace):
    """The certificates' DNS names, the CA injection, the bindings' subjects and the cloud-config address."""
    rendered = parse(template("autoscaler.cloudConfig.enabled=true", namespace=namespace))
    text = repr(rendered)
    assert NAMESPACE not in text, "the default namespace leaked into a release in another namespace"
    webhook_cert = next(o for o in rendered if o["kind"] == "Certificate"
                        and o["metadata"]["name"] == "homecluster-webhook-cert")
    assert webhook_cert["spec"]["dnsNames"][0] == f"homecluster-webhook-service.{namespace}.svc"
    config = next(o for o in rendered if o["kind"] == "ConfigMap")
    assert f"homecluster-provider.{namespace}.svc:50051" in config["data"]["cloud-config"]
    events = [o for o in rendered if o["metadata"]["name"] == "homecluster-events"]
    assert {o["metadata"]["namespace"] for o in events} == {"default"}
    leases = [o for o in rendered if o["metadata"]["name"] == "homecluster-node-leases"]
    assert {o["metadata"]["namespace"] for o in leases} == {"kube-node-lease"}
    assert {s["namespace"] for o in leases if o["kind"] == "RoleBinding" for s in o["subjects"]} == {namespace}


def test_values_reach_the_operator():
    rendered = parse(template("image.tag=9.9.9", "operator.jobImage=registry.local/runner:1",
                              "operator.extraArgs={--shutdown-holdoff=5m}", "operator.logFormat=json",
                              "resources.limits.memory=1Gi", *NO_CERT_MANAGER))
    deployment = next(o for o in rendered if o["kind"] == "Deployment")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["image"].endswith(":9.9.9")
    assert {"--job-image=registry.local/runner:1", "--shutdown-holdoff=5m", "--log-format=json"} <= set(
        container["args"])
    assert container["resources"]["limits"]["memory"] == "1Gi"
    webhook = next(o for o in rendered if o["kind"] == "ValidatingWebhookConfiguration")
    assert webhook["webhooks"][0]["clientConfig"]["caBundle"] == FAKE_CA
    assert "annotations" not in webhook["metadata"], "no cert-manager injection without cert-manager"
    assert not [o for o in rendered if o["apiVersion"].startswith("cert-manager.io/")]


def test_job_namespace_moves_the_jobs_rights_and_identity_there():
    """--job-namespace: the boot monitor lists the Jobs' pods and Events there (lifecycle/jobpods.py), so the
    operator's Role must grant them in that namespace, and the Jobs' own ServiceAccount must live there."""
    jobs_ns = "homecluster-jobs"
    rendered = parse(template(f"jobNamespace={jobs_ns}", "operator.managedNodeSelector=homecluster.dev/pool=workers"))
    container = next(o for o in rendered if o["kind"] == "Deployment")["spec"]["template"]["spec"]["containers"][0]
    assert f"--job-namespace={jobs_ns}" in container["args"]
    assert "--managed-node-selector=homecluster.dev/pool=workers" in container["args"]
    [role] = [o for o in rendered if o["kind"] == "Role" and o["metadata"]["name"] == "homecluster-manager"]
    assert role["metadata"]["namespace"] == jobs_ns
    grants = {(r["apiGroups"][0], res): set(r["verbs"]) for r in role["rules"] for res in r["resources"]}
    assert grants[("batch", "jobs")] >= {"get", "list", "watch", "create", "delete"}
    assert "list" in grants[("", "pods")] and "list" in grants[("", "events")]
    [binding] = [o for o in rendered if o["kind"] == "RoleBinding" and o["metadata"]["name"] == "homecluster-manager"]
    assert binding["metadata"]["namespace"] == jobs_ns
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "homecluster-controller",
                                    "namespace": NAMESPACE}]
    [job_sa] = [o for o in rendered if o["kind"] == "ServiceAccount" and o["metadata"]["name"] == "homecluster-job"]
    assert job_sa["metadata"]["namespace"] == jobs_ns
    [job_binding] = [o for o in rendered if o["kind"] == "ClusterRoleBinding"
                     and o["metadata"]["name"] == "homecluster-job"]
    assert job_binding["subjects"] == [{"kind": "ServiceAccount", "name": "homecluster-job", "namespace": jobs_ns}]
    # without the value nothing moves and the operator gets no flag
    default = parse(template())
    container = next(o for o in default if o["kind"] == "Deployment")["spec"]["template"]["spec"]["containers"][0]
    assert not [a for a in container["args"] if a.startswith(("--job-namespace", "--managed-node-selector"))]
