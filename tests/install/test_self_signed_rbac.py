"""Self-signed mode's rights (config/components/self-signed-certs/rbac.yaml, in config/default-no-certmanager):
exactly what operator/certificates.py calls -- the four certificate Secrets by name, create of Secrets, its own
ValidatingWebhookConfiguration by name -- and nothing more. The names are the code's own constants, so a
renamed Secret or configuration fails here before it fails in a cluster. (tests/k8s/test_k8s_self_signed.py
checks the same rules on the real authorizer; the chart's copy is compared in test_helm_chart.py.)
"""
from __future__ import annotations

import pytest

from install_helpers import CONFIG, find, render
from rbac_audit import MANAGER_SA, Request, rules_for_service_account, uncovered

from homecluster.certs import plan
from homecluster.operator.certificates import WEBHOOK_CONFIGURATION

NS = "homecluster-system"
ADM = "admissionregistration.k8s.io"
SECRET_NAMES = (plan.CA_SECRET, plan.WEBHOOK_SECRET, plan.PROVIDER_SECRET, plan.CLIENT_SECRET)
CALLS = [
    # list and watch by name: operator/certwatch.py's watches (fieldSelector metadata.name, which the authorizer
    # checks against resourceNames)
    *(Request(verb, "", "secrets", namespace=NS, name=name) for name in SECRET_NAMES
      for verb in ("get", "patch", "list", "watch")),
    Request("create", "", "secrets", namespace=NS),
    *(Request(verb, ADM, "validatingwebhookconfigurations", name=WEBHOOK_CONFIGURATION)
      for verb in ("get", "patch", "list", "watch")),
]
FORBIDDEN = [
    Request("get", "", "secrets", namespace=NS, name="worker-01-bmc"), Request("list", "", "secrets", namespace=NS),
    Request("watch", "", "secrets", namespace=NS), Request("list", "", "secrets"),
    Request("delete", "", "secrets", namespace=NS, name=plan.CA_SECRET),
    Request("update", "", "secrets", namespace=NS, name=plan.CA_SECRET),
    Request("get", "", "secrets", namespace="kube-system", name=plan.CA_SECRET),
    Request("create", "", "secrets", namespace="kube-system"),
    Request("patch", ADM, "validatingwebhookconfigurations", name="someone-else"),
    Request("get", ADM, "validatingwebhookconfigurations", name="someone-else"),
    Request("list", ADM, "validatingwebhookconfigurations"), Request("watch", ADM, "validatingwebhookconfigurations"),
    Request("watch", "", "secrets", namespace=NS, name="worker-01-bmc"),
    Request("watch", ADM, "validatingwebhookconfigurations", name="someone-else"),
    Request("patch", ADM, "mutatingwebhookconfigurations", name=WEBHOOK_CONFIGURATION),
    Request("delete", ADM, "validatingwebhookconfigurations", name=WEBHOOK_CONFIGURATION),
]


@pytest.fixture(scope="module")
def objects():
    return render(CONFIG / "default-no-certmanager")


def test_the_manager_may_do_what_self_signed_mode_calls(objects):
    assert uncovered(rules_for_service_account(objects, *MANAGER_SA), CALLS) == []


def test_the_manager_may_not_do_more(objects):
    rules = rules_for_service_account(objects, *MANAGER_SA)
    assert uncovered(rules, FORBIDDEN) == FORBIDDEN


def test_config_default_grants_none_of_it(default_objects):
    rules = rules_for_service_account(default_objects, *MANAGER_SA)
    assert uncovered(rules, CALLS) == CALLS


def test_no_wildcards_and_the_webhook_configuration_is_the_one_config_webhook_ships(objects):
    for role in [o for o in objects if o["kind"] in ("Role", "ClusterRole")]:
        for rule in role["rules"]:
            for field in ("verbs", "resources", "apiGroups", "resourceNames"):
                assert not any("*" in v for v in rule.get(field, [])), f"{role['metadata']['name']}: {rule}"
    (webhook,) = find(objects, "ValidatingWebhookConfiguration")
    assert webhook["metadata"]["name"] == WEBHOOK_CONFIGURATION
    services = {h["clientConfig"]["service"]["name"] for h in webhook["webhooks"]}
    assert services == {plan.WEBHOOK_SERVICE}
    assert {s["metadata"]["name"] for s in find(objects, "Service")} >= {plan.WEBHOOK_SERVICE, plan.PROVIDER_SERVICE}
