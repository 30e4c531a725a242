"""The overrides an admin expects of a chart (those of the cluster-autoscaler's and cert-manager's): the
ServiceAccount (create, name, annotations) followed by every binding and the admission policy that names it,
pod and container securityContext, extra volumes and mounts, extra env, placement, the PriorityClass, the
operator's image by digest. Rendered by the real helm (skipped until it is built)."""
from __future__ import annotations

import json

from helm_chart import CHART, SELF_SIGNED, helm, parse, template
from install_helpers import REPO

DIGEST = "sha256:" + "ab" * 32


def _deployment(rendered):
    (deployment,) = [o for o in rendered if o["kind"] == "Deployment"]
    return deployment


def _pod(rendered):
    return _deployment(rendered)["spec"]["template"]["spec"]


def test_a_service_account_of_your_own_is_the_one_every_binding_and_the_node_policy_name():
    rendered = parse(template("serviceAccount.name=hc-operator", "serviceAccount.annotations.team=homelab",
                              "jobNamespace=homecluster-jobs", *SELF_SIGNED))
    assert _pod(rendered)["serviceAccountName"] == "hc-operator"
    (account,) = [o for o in rendered if o["kind"] == "ServiceAccount" and o["metadata"]["name"] != "homecluster-job"]
    assert account["metadata"]["name"] == "hc-operator" and account["metadata"]["annotations"] == {"team": "homelab"}
    bound = [s for o in rendered if o["kind"] in ("RoleBinding", "ClusterRoleBinding")
             for s in o["subjects"] if s["kind"] == "ServiceAccount" and s["name"] != "homecluster-job"]
    assert len(bound) >= 7 and {s["name"] for s in bound} == {"hc-operator"}, bound
    (policy,) = [o for o in rendered if o["kind"] == "ValidatingAdmissionPolicy"
                 and "not-the-operator" in str(o["spec"].get("matchConditions"))]
    assert "endsWith(':hc-operator')" in policy["spec"]["matchConditions"][0]["expression"]
    assert "homecluster-controller" not in str([o for o in rendered if o["kind"] != "Deployment"])


def test_the_operators_own_account_cannot_be_a_jobs_account():
    done = helm("template", "homecluster", str(CHART), "--set", "serviceAccount.name=hc-operator",
                "--set", "operator.jobServiceAccounts={homecluster-job-gpu,hc-operator}")
    assert done.returncode != 0
    assert 'operator.jobServiceAccounts names "hc-operator", the operator\'s own ServiceAccount' in done.stderr, done.stderr


def test_with_create_false_the_chart_binds_an_account_it_does_not_render():
    rendered = parse(template("serviceAccount.create=false", "serviceAccount.name=mine"))
    assert [o["metadata"]["name"] for o in rendered if o["kind"] == "ServiceAccount"] == ["homecluster-job"]
    assert _pod(rendered)["serviceAccountName"] == "mine"


def test_security_contexts_volumes_env_and_placement_reach_the_pod():
    rendered = parse(template(
        "podSecurityContext.runAsUser=1000", "podSecurityContext.fsGroup=2000",
        "securityContext.readOnlyRootFilesystem=false",
        "extraVolumes[0].name=corp-ca", "extraVolumes[0].configMap.name=corp-ca",
        "extraVolumeMounts[0].name=corp-ca", "extraVolumeMounts[0].mountPath=/etc/corp-ca",
        "operator.extraEnv[0].name=SSL_CERT_DIR", "operator.extraEnv[0].value=/etc/corp-ca",
        "nodeSelector.homecluster\\.dev/power=always-on",
        "tolerations[0].key=node-role.kubernetes.io/control-plane", "tolerations[0].effect=NoSchedule",
        "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
        ".matchExpressions[0].key=kubernetes.io/arch",
        "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
        ".matchExpressions[0].operator=Exists",
        "priorityClassName=homelab-critical"))
    pod = _pod(rendered)
    (container,) = pod["containers"]
    assert pod["securityContext"]["runAsUser"] == 1000 and pod["securityContext"]["fsGroup"] == 2000
    assert pod["securityContext"]["runAsNonRoot"] is True, "one key set keeps the other defaults"
    assert container["securityContext"]["readOnlyRootFilesystem"] is False
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert {"name": "corp-ca", "configMap": {"name": "corp-ca"}} in pod["volumes"]
    assert {"name": "corp-ca", "mountPath": "/etc/corp-ca"} in container["volumeMounts"]
    assert {v["name"] for v in pod["volumes"]} >= {"tmp", "webhook-cert", "provider-cert"}
    assert {"name": "SSL_CERT_DIR", "value": "/etc/corp-ca"} in container["env"]
    assert pod["nodeSelector"] == {"homecluster.dev/power": "always-on"}
    assert pod["tolerations"] == [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]
    assert "nodeAffinity" in pod["affinity"]
    assert pod["priorityClassName"] == "homelab-critical"


def test_the_defaults_are_restricted_and_system_cluster_critical():
    pod = _pod(parse(template()))
    assert pod["priorityClassName"] == "system-cluster-critical"
    assert pod["securityContext"] == {"runAsNonRoot": True, "runAsUser": 65532, "runAsGroup": 65532,
                                      "fsGroup": 65532, "seccompProfile": {"type": "RuntimeDefault"}}
    assert pod["containers"][0]["securityContext"]["allowPrivilegeEscalation"] is False
    assert "priorityClassName" not in _pod(parse(template("priorityClassName=")))


def test_image_digest_pins_the_operator_and_the_runner_pins_alike():
    pod = _pod(parse(template("image.tag=1.2.3", f"image.digest={DIGEST}", f"operator.jobImageDigest={DIGEST}")))
    (container,) = pod["containers"]
    assert container["image"] == f"ghcr.io/homecluster-dev/homecluster-controller:1.2.3@{DIGEST}"
    assert [a for a in container["args"] if a.startswith("--job-image=")] == [
        f"--job-image=ghcr.io/homecluster-dev/homecluster-runner:1.2.3@{DIGEST}"], "the runner of the operator's own version"
    done = helm("template", "homecluster", str(CHART), "--set", "image.digest=latest")
    assert done.returncode != 0
    assert 'image.digest "latest" is not a digest: give sha256: and 64 hex digits' in done.stderr, done.stderr


def test_the_grafana_dashboard_configmap_carries_the_sidecars_label_and_the_dashboard():
    assert not [o for o in parse(template()) if o["metadata"]["name"] == "homecluster-dashboard"], "off by default"
    (configmap,) = [o for o in parse(template("grafanaDashboard.enabled=true", "grafanaDashboard.namespace=monitoring",
                                              "grafanaDashboard.folder=Home lab"))
                    if o["metadata"]["name"] == "homecluster-dashboard"]
    assert configmap["kind"] == "ConfigMap" and configmap["metadata"]["namespace"] == "monitoring"
    assert configmap["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert configmap["metadata"]["annotations"] == {"grafana_folder": "Home lab"}
    shipped = json.loads((REPO / "dashboards" / "homecluster.json").read_text())
    assert json.loads(configmap["data"]["homecluster.json"]) == shipped
    (other,) = [o for o in parse(template("grafanaDashboard.enabled=true", "grafanaDashboard.label=dashboards",
                                          "grafanaDashboard.labelValue=homelab"))
                if o["metadata"]["name"] == "homecluster-dashboard"]
    assert other["metadata"]["labels"]["dashboards"] == "homelab" and "grafana_dashboard" not in other["metadata"]["labels"]
