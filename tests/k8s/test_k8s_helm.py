"""The one-command installs against the real kube-apiserver (lab/k8s): the Helm chart, with and without
cert-manager, and dist/install.yaml, each admitted by `kubectl apply --dry-run=server` (kubectl validates
fields strictly, the server runs its schemas, defaulting and admission); then `helm install` for real
(every object of `helm get manifest` is there, the CRDs are Established) and `helm uninstall`; then
`kubectl apply --server-side -f dist/install.yaml` for real, every object there.

What the real control plane here cannot show: the operator's pod running. There is no kubelet yet
(issue 12's later part), so the Deployment is accepted and its ReplicaSet made, but no container starts
and no claim boots a machine; `helm install` runs without --wait for that reason.

cert-manager is not installed in this API server. Its kinds (Certificate, Issuer) and the Prometheus
Operator's ServiceMonitor and PrometheusRule are admitted through minimal stub CRDs (STUB_CRDS: any spec is accepted), so
the dry run proves our objects' apiVersion, kind, names and namespaces, not cert-manager's own schema
of their spec; tests/install/test_helm_chart.py proves those specs equal config/certmanager's.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
import pytest_asyncio
import yaml

from homecluster_lab.k8s import binaries
from homecluster_lab.k8s.controlplane import RealControlPlane

from k8s_objects import KubectlReader, established, run
from helm_chart import (CHART, NAMESPACE, NO_CERT_MANAGER, SELF_SIGNED, helm_env, helm_or_skip,
                        parse, template)

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.asyncio(loop_scope="module")

# (group, kind, plural) of the foreign kinds our manifests use, admitted with any spec.
FOREIGN_KINDS = (("cert-manager.io", "Certificate", "certificates"),
                 ("cert-manager.io", "Issuer", "issuers"),
                 ("monitoring.coreos.com", "ServiceMonitor", "servicemonitors"),
                 ("monitoring.coreos.com", "PrometheusRule", "prometheusrules"))


def stub_crd(group: str, kind: str, plural: str) -> dict:
    version = "v1"
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {"group": group, "scope": "Namespaced",
                 "names": {"kind": kind, "plural": plural, "singular": kind.lower(), "listKind": f"{kind}List"},
                 "versions": [{"name": version, "served": True, "storage": True,
                               "schema": {"openAPIV3Schema": {
                                   "type": "object",
                                   "x-kubernetes-preserve-unknown-fields": True}}}]}}


@pytest.fixture(scope="module")
def kubectl() -> str:
    found = binaries.find("kubectl")
    if found is None:
        pytest.skip(binaries.missing_reason(("kubectl",)))
    return str(found)


@pytest.fixture(scope="module")
def env(real_k8s: RealControlPlane, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return helm_env(real_k8s.kubeconfig_path, tmp_path_factory.mktemp("helm-home"))


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def prepared(kubectl: str, env: dict[str, str]) -> None:
    """The operator's namespace (a dry run of a Namespace does not create it) and the foreign stub CRDs."""
    stubs = yaml.safe_dump_all([stub_crd(*k) for k in FOREIGN_KINDS])
    code, _, err = await run([kubectl, "apply", "-f", "-"], env, stdin=stubs)
    assert code == 0, err
    await established(KubectlReader(kubectl, env), *[f"{plural}.{group}" for group, _, plural in FOREIGN_KINDS])
    code, _, err = await run([kubectl, "create", "namespace", NAMESPACE], env)
    assert code == 0, err


async def dry_run(kubectl: str, env: dict[str, str], manifest: str) -> str:
    code, out, err = await run([kubectl, "apply", "--dry-run=server", "--server-side",
                                "--field-manager=homecluster-test", "-f", "-"], env, stdin=manifest)
    assert code == 0, f"the real API server refused the manifest:\n{err}"
    return out


async def assert_exist(kubectl: str, env: dict[str, str], objects: list[dict], how: str) -> None:
    for obj in objects:
        where = ["--namespace", obj["metadata"]["namespace"]] if obj["metadata"].get("namespace") else []
        group = obj["apiVersion"].split("/")[0] if "/" in obj["apiVersion"] else ""
        ref = f"{obj['kind']}.{group}".rstrip(".")
        code, _, err = await run([kubectl, "get", f"{ref}/{obj['metadata']['name']}", *where], env)
        assert code == 0, f"{obj['kind']} {obj['metadata']['name']} is missing after {how}: {err}"


def kinds_of(manifest: str) -> set[str]:
    return {d["kind"] for d in parse(manifest)}


async def test_dist_install_yaml_is_admitted(prepared, kubectl, env):
    manifest = (REPO / "dist" / "install.yaml").read_text()
    out = await dry_run(kubectl, env, manifest)
    assert out.count("(server dry run)") == len(parse(manifest))


async def test_chart_with_cert_manager_is_admitted(prepared, kubectl, env):
    manifest = template("serviceMonitor.enabled=true", "autoscaler.cloudConfig.enabled=true", "grafanaDashboard.enabled=true",
                        "prometheusRule.enabled=true", "networkPolicy.enabled=true", include_crds=True)
    assert {"Certificate", "Issuer", "ServiceMonitor", "ConfigMap", "CustomResourceDefinition", "PrometheusRule",
            "NetworkPolicy", "ClusterRole"} <= kinds_of(manifest)
    out = await dry_run(kubectl, env, manifest)
    assert out.count("(server dry run)") == len(parse(manifest))


async def test_chart_without_cert_manager_is_admitted(prepared, kubectl, env):
    manifest = template(*NO_CERT_MANAGER, include_crds=True)
    assert not kinds_of(manifest) & {"Certificate", "Issuer"}
    out = await dry_run(kubectl, env, manifest)
    assert out.count("(server dry run)") == len(parse(manifest))


async def test_self_signed_chart_and_dist_install_self_signed_yaml_are_admitted(prepared, kubectl, env):
    for manifest in (template(*SELF_SIGNED, include_crds=True),
                     (REPO / "dist" / "install-self-signed.yaml").read_text()):
        assert not kinds_of(manifest) & {"Certificate", "Issuer", "Secret"}
        out = await dry_run(kubectl, env, manifest)
        assert out.count("(server dry run)") == len(parse(manifest))


async def test_helm_install_creates_every_object(prepared, kubectl, env, tmp_path):
    """A real install into another namespace without cert-manager, as docs/install.md says ("Helm without
    cert-manager"): scripts/make-certs.py's Secrets applied first, the CA read back from the Secret."""
    helm = str(helm_or_skip())
    namespace = "homecluster-helm"
    code, _, err = await run([kubectl, "create", "namespace", namespace], env)
    assert code == 0, err
    code, _, err = await run([sys.executable, str(REPO / "scripts" / "make-certs.py"), "--namespace", namespace,
                              "--out", str(tmp_path / "certs")], env)
    assert code == 0, err
    code, _, err = await run([kubectl, "apply", "-f", str(tmp_path / "certs" / "secrets.yaml")], env)
    assert code == 0, err
    code, ca_bundle, err = await run([kubectl, "-n", namespace, "get", "secret", "homecluster-webhook-cert",
                                      "-o", "jsonpath={.data.ca\\.crt}"], env)
    assert code == 0 and ca_bundle, err
    code, out, err = await run([helm, "install", "homecluster", str(CHART), "--namespace", namespace,
                                "--set", "certificates.mode=secrets", "--set", f"webhook.caBundle={ca_bundle}"], env)
    assert code == 0, f"helm install failed:\n{out}{err}"
    code, out, err = await run([helm, "get", "manifest", "homecluster", "--namespace", namespace], env)
    assert code == 0, err
    installed = parse(out)
    assert {"Deployment", "ValidatingWebhookConfiguration", "ClusterRole", "Service"} <= {o["kind"] for o in installed}
    await assert_exist(kubectl, env, installed, "helm install")
    # The CRDs (the chart's crds/, installed by helm before the templates) are served.
    await established(KubectlReader(kubectl, env), "nodeclaims.infra.homecluster.dev",
                      "nodes.infra.homecluster.dev", "groups.infra.homecluster.dev")
    # The webhook points at the release's namespace; the Deployment exists but no pod runs (no kubelet).
    code, out, err = await run([kubectl, "get", "validatingwebhookconfiguration",
                                "homecluster-validating-webhook-configuration", "-o", "yaml"], env)
    assert code == 0, err
    webhook = yaml.safe_load(out)
    assert webhook["webhooks"][0]["clientConfig"]["service"]["namespace"] == namespace
    assert webhook["webhooks"][0]["clientConfig"]["caBundle"] == ca_bundle
    # helm uninstall removes what it made (not the CRDs: Helm never deletes crds/), so the next test's
    # install of the same cluster-scoped names meets no leftover owner.
    code, out, err = await run([helm, "uninstall", "homecluster", "--namespace", namespace, "--wait"], env)
    assert code == 0, f"helm uninstall failed:\n{out}{err}"


async def test_dist_install_yaml_applies_for_real(prepared, kubectl, env):
    """What a user types: `kubectl apply --server-side -f dist/install.yaml` (cert-manager's kinds: stubs)."""
    manifest = (REPO / "dist" / "install.yaml").read_text()
    code, out, err = await run([kubectl, "apply", "--server-side", "-f", "-"], env, stdin=manifest)
    assert code == 0, f"kubectl apply -f dist/install.yaml failed:\n{out}{err}"
    await assert_exist(kubectl, env, parse(manifest), "kubectl apply -f dist/install.yaml")
