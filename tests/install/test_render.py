"""The kustomizations render with the real kubectl, and every object validates offline.

Built-in kinds against the Kubernetes schemas (kubernetes-validate, strict), our kinds against our CRDs,
cert-manager and Prometheus kinds by hand (manifest_check explains why).
"""
from __future__ import annotations

import copy

import pytest

from install_helpers import CONFIG, find, render
from manifest_check import check, check_builtin, check_by_hand, check_custom, ident

RENDERED = ["default", "autoscaler", "prometheus", "samples", "rbac", "manager", "webhook", "certmanager"]


@pytest.mark.parametrize("directory", RENDERED)
def test_every_object_validates(directory):
    objects = render(CONFIG / directory)
    assert objects, f"config/{directory} rendered nothing"
    errors = [e for o in objects for e in check(o)]
    assert errors == []


def test_default_has_what_an_install_needs(default_objects):
    kinds = {(o["kind"], o["metadata"]["name"]) for o in default_objects}
    for want in [("Namespace", "homecluster-system"),
                 ("CustomResourceDefinition", "groups.infra.homecluster.dev"),
                 ("CustomResourceDefinition", "nodes.infra.homecluster.dev"),
                 ("CustomResourceDefinition", "nodeclaims.infra.homecluster.dev"),
                 ("ServiceAccount", "homecluster-controller"), ("ServiceAccount", "homecluster-job"),
                 ("Deployment", "homecluster-controller"), ("Service", "homecluster-webhook-service"),
                 ("Service", "homecluster-provider"), ("Service", "homecluster-metrics"),
                 
                 ("Certificate", "homecluster-webhook-cert"), ("Certificate", "homecluster-provider-server"),
                 ("Certificate", "homecluster-provider-client")]:
        assert want in kinds, f"config/default lacks {want[0]} {want[1]}"
    webhooks = [w["name"] for o in find(default_objects, "ValidatingWebhookConfiguration") for w in o["webhooks"]]
    assert webhooks == ["nodeclaim-v2alpha1.kb.io", "group-v2alpha1.kb.io", "node-v2alpha1.kb.io",
                        "pods-eviction.homecluster.dev"]
    # samples (placeholder Secrets, a hand-made claim) are never part of an install
    assert not find(default_objects, "Secret") and not find(default_objects, "NodeClaim")


def test_every_namespaced_object_lands_in_the_operator_namespace(default_objects):
    cluster_scoped = {"Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding",
                      "ValidatingWebhookConfiguration"}
    for obj in default_objects:
        ns = obj["metadata"].get("namespace")
        if obj["kind"] in cluster_scoped:
            assert ns is None, f"{ident(obj)} is cluster-scoped but has a namespace"
        elif obj["metadata"]["name"] == "homecluster-events" and obj["kind"] in ("Role", "RoleBinding"):
            # Events of cluster-scoped objects live in "default" (config/rbac/events_role.yaml)
            assert ns == "default", f"{ident(obj)} is in namespace {ns!r}"
        elif obj["metadata"]["name"] == "homecluster-node-leases" and obj["kind"] in ("Role", "RoleBinding"):
            # the kubelets' Leases live in kube-node-lease (config/rbac/node_lease_role.yaml)
            assert ns == "kube-node-lease", f"{ident(obj)} is in namespace {ns!r}"
        else:
            assert ns == "homecluster-system", f"{ident(obj)} is in namespace {ns!r}"


def test_no_certmanager_overlay_is_self_signed_mode(no_certmanager):
    """config/default-no-certmanager needs nothing made beforehand: the operator makes its certificates."""
    _, objects = no_certmanager
    assert [e for o in objects for e in check(o)] == []
    assert not [o for o in objects if o["apiVersion"].startswith("cert-manager.io")]
    assert find(objects, "Secret") == []  # the operator creates them; nothing secret in Git
    (webhook,) = find(objects, "ValidatingWebhookConfiguration")
    assert "cert-manager.io/inject-ca-from" not in (webhook["metadata"].get("annotations") or {})
    assert not [h for h in webhook["webhooks"] if "caBundle" in h["clientConfig"]]  # the operator sets it
    (deployment,) = find(objects, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert {"name": "HOMECLUSTER_SELF_SIGNED_CERTS", "value": "true"} in container["env"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    for name, flag in (("webhook-cert", "--webhook-cert"), ("provider-cert", "--provider-cert")):
        assert volumes[name] == {"name": name, "emptyDir": {"medium": "Memory", "sizeLimit": "1Mi"}}
        assert mounts[name]["readOnly"] is False
        path = next(a.split("=", 1)[1] for a in container["args"] if a.startswith(flag + "="))
        assert path.startswith(mounts[name]["mountPath"] + "/"), (flag, path)


# The checker itself must refuse what is wrong, or the tests above prove nothing.

def test_checker_refuses_unknown_and_mistyped_builtin_fields(default_objects):
    (deployment,) = find(default_objects, "Deployment")
    bad = copy.deepcopy(deployment)
    bad["spec"]["template"]["spec"]["containers"][0]["securityContxt"] = {}
    assert check_builtin(bad), "a misspelt field in a Deployment was accepted"
    bad = copy.deepcopy(deployment)
    bad["spec"]["replicas"] = "one"
    assert check_builtin(bad)


def test_checker_refuses_bad_custom_resources():
    group = {"apiVersion": "infra.homecluster.dev/v2alpha1", "kind": "Group", "metadata": {"name": "g"},
             "spec": {"maxSize": 2, "maxSise": 3,
                      "template": {"capacity": {"cpu": "1", "memory": "1Gi", "pods": 10}}}}
    errors = check_custom(group)
    assert any("maxSise" in e for e in errors), errors
    del group["spec"]["maxSise"]
    assert check_custom(group) == []
    group["spec"]["minSize"] = 5
    assert check_custom(group), "minSize > maxSize was accepted"


def test_checker_refuses_incomplete_cert_manager_objects():
    cert = {"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
            "metadata": {"name": "c", "namespace": "n"}, "spec": {"issuerRef": {"name": "i"}, "dnsNames": ["a"]}}
    assert any("secretName" in e for e in check_by_hand(cert))
    cert["spec"]["secretName"] = "s"
    assert check_by_hand(cert) == []
    cert["spec"]["usages"] = ["server-auth"]
    assert check_by_hand(cert)
    issuer = {"apiVersion": "cert-manager.io/v1", "kind": "Issuer", "metadata": {"name": "i", "namespace": "n"},
              "spec": {"selfSigned": {}, "ca": {"secretName": "x"}}}
    assert check_by_hand(issuer), "an Issuer with two kinds was accepted"
