"""One rule written twice: credentials never go to a plain-http API server on another machine.

The collection's node modules (plugins/module_utils/kube_config.py, `plain_http_refusal`) cannot import the
controller, and the controller (controller/homecluster/kube/kubeconfig_checks.py, `check_plain_http`) does not
ship the collection, so each holds its own copy. This runs both on the same kubeconfigs and asks them to agree,
so a change to one that is not made to the other fails here. (Not under ansible-test: it imports the controller.)
"""
from __future__ import annotations

import pytest

from ansible_collections.homecluster.infra.plugins.module_utils import kube_config
from homecluster.kube import kubeconfig_checks

SERVERS = ("http://localhost:8080", "http://127.0.0.1:6443", "http://127.8.9.10", "http://[::1]:6443",
           "http://10.0.0.5:6443", "http://api.example.org", "http://localhost.example.org",
           "https://10.0.0.5:6443", "https://api.example.org")
EXEC = {"apiVersion": "client.authentication.k8s.io/v1", "command": "kubelogin"}
USERS = {
    "none": {},
    "token": {"token": "t0"},
    "tokenFile": {"tokenFile": "token.txt"},
    "client-certificate": {"client-certificate": "c.crt", "client-key": "c.key"},
    "client-certificate-data": {"client-certificate-data": "Y2VydA==", "client-key-data": "a2V5"},
    "exec": {"exec": EXEC},
}


def collection_refuses(server: str, user: dict) -> bool:
    doc = {"clusters": [{"name": "c", "cluster": {"server": server}}], "users": [{"name": "u", "user": user}],
           "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}], "current-context": "x"}
    settings = kube_config.select(kube_config.merge([("/tmp/kubeconfig", doc)]))
    return kube_config.plain_http_refusal(settings) is not None


def controller_refuses(server: str, user: dict) -> bool:
    try:
        kubeconfig_checks.check_plain_http(server, user, "cluster c", "user u")
    except kubeconfig_checks.KubeconfigError:
        return True
    return False


@pytest.mark.parametrize("server", SERVERS)
@pytest.mark.parametrize("kind", sorted(USERS))
def test_the_collection_and_the_controller_refuse_the_same_kubeconfigs(server: str, kind: str):
    user = USERS[kind]
    verdict = controller_refuses(server, user)
    assert collection_refuses(server, user) == verdict, (server, kind)
    # and the rule itself, so that agreeing on a wrong answer fails too
    other_machine = server.startswith("http://") and not any(
        host in server for host in ("localhost:", "127.", "[::1]"))
    assert verdict == (other_machine and kind != "none"), (server, kind)
