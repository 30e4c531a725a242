"""kube_config (pure): what a kubeconfig says about one context, the fields refused, an exec plugin's answer;
and kube_client's pure parts: how the explicit options lay over the kubeconfig or the pod's credentials."""
from __future__ import annotations

import json

import pytest

from ansible_collections.homecluster.infra.plugins.module_utils import kube_client
from ansible_collections.homecluster.infra.plugins.module_utils.kube_config import (
    KubeconfigError, exec_credential, merge, plain_http_refusal, select,
)

EXEC = {"apiVersion": "client.authentication.k8s.io/v1", "command": "kubelogin", "args": ["get-token"],
        "env": [{"name": "MODE", "value": "device"}]}


def doc(server="https://10.0.0.2:6443", user=None, cluster_extra=None, name="lab", current="lab"):
    return {"clusters": [{"name": name, "cluster": dict({"server": server}, **(cluster_extra or {}))}],
            "users": [{"name": name, "user": user if user is not None else {"token": "t0"}}],
            "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
            "current-context": current}


def test_the_current_context_gives_the_server_and_credentials_with_paths_made_absolute():
    user = {"client-certificate": "pki/admin.crt", "client-key": "/abs/admin.key", "tokenFile": "token"}
    got = select(merge([("/home/me/.kube/config", doc(user=user, cluster_extra={"certificate-authority": "ca.crt"}))]))
    assert got == {"host": "https://10.0.0.2:6443", "verify": True, "ca_file": "/home/me/.kube/ca.crt",
                   "cert_file": "/home/me/.kube/pki/admin.crt", "key_file": "/abs/admin.key",
                   "token_file": "/home/me/.kube/token"}


def test_inline_data_and_insecure_skip_are_read():
    user = {"client-certificate-data": "Y2VydA==", "client-key-data": "a2V5"}
    cluster = {"certificate-authority-data": "Y2E=", "insecure-skip-tls-verify": True}
    got = select(merge([("/k", doc(user=user, cluster_extra=cluster))]))
    assert got == {"host": "https://10.0.0.2:6443", "verify": False, "ca_data": "Y2E=", "cert_data": "Y2VydA==",
                   "key_data": "a2V5"}


def test_a_kubeconfig_list_merges_as_kubectl_does_the_first_file_wins():
    first = doc(server="https://first:6443", current=None)
    second = doc(server="https://second:6443", name="lab")
    second["clusters"].append({"name": "other", "cluster": {"server": "https://other:6443"}})
    second["contexts"].append({"name": "other", "context": {"cluster": "other", "user": "lab"}})
    merged = merge([("/a/config", first), ("/b/config", second), ("/c/empty", None),
                    ("/d/config", doc(server="https://d:6443", name="d", current="d"))])
    assert merged["current-context"] == "lab"  # the first file that sets one
    assert select(merged)["host"] == "https://first:6443"  # "lab" is the first file's
    assert select(merged, "other")["host"] == "https://other:6443"


@pytest.mark.parametrize("context, words", [
    ("nope", "the kubeconfig has no context 'nope' (it has: lab)"),
    (None, "no current-context: set context"),
])
def test_a_missing_context_is_named_with_the_fix(context, words):
    with pytest.raises(KubeconfigError, match=words.replace("(", r"\(").replace(")", r"\)")):
        select(merge([("/k", doc(current=None))]), context)


def test_a_context_naming_a_missing_cluster_or_user_says_which():
    broken = doc()
    broken["contexts"][0]["context"]["user"] = "ghost"
    with pytest.raises(KubeconfigError, match="context lab names user 'ghost'"):
        select(merge([("/k", broken)]))
    with pytest.raises(KubeconfigError, match="cluster lab has no server: set it, or set host"):
        select(merge([("/k", doc(server=""))]))


@pytest.mark.parametrize("field, value, fix", [
    ("auth-provider", {"name": "oidc"}, "use an exec credential plugin"),
    ("username", "admin", "basic authentication was removed"),
    ("as", "someone", "impersonation is not supported"),
])
def test_user_fields_the_modules_do_not_speak_are_refused_naming_them(field, value, fix):
    with pytest.raises(KubeconfigError, match="user lab sets %s, which these modules do not support: .*%s" % (field, fix)):
        select(merge([("/k", doc(user={field: value}))]))


@pytest.mark.parametrize("field, fix", [("tls-server-name", "set host"), ("proxy-url", "without the proxy")])
def test_cluster_fields_the_modules_do_not_speak_are_refused_naming_them(field, fix):
    with pytest.raises(KubeconfigError, match="cluster lab sets %s, .*%s" % (field, fix)):
        select(merge([("/k", doc(cluster_extra={field: "x"}))]))


def test_an_exec_plugin_is_taken_with_its_args_env_and_a_command_beside_the_file():
    got = select(merge([("/home/me/.kube/config", doc(user={"exec": dict(EXEC, command="./bin/token")}))]))
    assert got["exec"] == {"apiVersion": "client.authentication.k8s.io/v1", "command": "/home/me/.kube/./bin/token",
                           "args": ["get-token"], "env": {"MODE": "device"}}
    on_path = select(merge([("/k", doc(user={"exec": EXEC}))]))["exec"]["command"]
    assert on_path == "kubelogin"  # a bare name is looked up on PATH, as kubectl does


@pytest.mark.parametrize("bad, words", [
    ({"apiVersion": "client.authentication.k8s.io/v1alpha1"}, "exec apiVersion 'client.authentication.k8s.io/v1alpha1'"),
    ({"command": ""}, "exec has no command"),
    ({"args": "get-token"}, "exec args must be a list of strings"),
    ({"env": [{"name": "A"}]}, "exec env must be a list of"),
])
def test_a_malformed_exec_plugin_is_refused_naming_what(bad, words):
    with pytest.raises(KubeconfigError, match="user lab: " + words.replace("(", r"\(")):
        select(merge([("/k", doc(user={"exec": dict(EXEC, **bad)}))]))


def test_an_exec_plugins_answer_gives_a_token_or_a_certificate_and_nothing_else():
    spec = {"command": "kubelogin"}
    assert exec_credential(spec, json.dumps({"status": {"token": "abc"}})) == {"token": "abc"}
    pair = {"clientCertificateData": "-----BEGIN CERTIFICATE-----", "clientKeyData": "-----BEGIN EC PRIVATE KEY-----"}
    wanted = {"cert_pem": pair["clientCertificateData"], "key_pem": pair["clientKeyData"]}
    assert exec_credential(spec, json.dumps({"status": pair})) == wanted
    for answer, words in (("not json", "did not print an ExecCredential"), ("[]", "printed an ExecCredential without status"),
                          ('{"status": {"clientKeyData": "k"}}', "printed neither a token nor")):
        with pytest.raises(KubeconfigError, match="exec plugin kubelogin " + words):
            exec_credential(spec, answer)


def test_entries_without_names_or_of_the_wrong_shape_are_refused():
    with pytest.raises(KubeconfigError, match="a cluster entry has no name"):
        merge([("/k", {"clusters": [{"cluster": {}}]})])
    with pytest.raises(KubeconfigError, match="kubeconfig /k is not a mapping"):
        merge([("/k", ["clusters"])])


def test_the_explicit_options_lay_over_the_base_and_replace_what_they_stand_for():
    base = {"host": "https://a:6443", "verify": True, "token_file": "/t", "exec": {"command": "x"},
            "ca_data": "Y2E=", "cert_data": "Yw==", "key_data": "aw=="}
    explicit = kube_client.overrides({"host": "https://b:6443", "api_key": "tok", "ca_cert": "/ca.crt",
                                      "client_cert": "/c.crt", "client_key": "/c.key", "validate_certs": False})
    assert kube_client.combine(base, explicit) == {"host": "https://b:6443", "verify": False, "token": "tok",
                                                   "ca_file": "/ca.crt", "cert_file": "/c.crt", "key_file": "/c.key"}
    assert kube_client.combine(base, {}) == base


def test_a_pods_credentials_name_the_service_by_its_address(monkeypatch):
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "fd00::1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "6443")
    assert kube_client.in_cluster() == {
        "host": "https://[fd00::1]:6443", "verify": True,
        "token_file": "/var/run/secrets/kubernetes.io/serviceaccount/token",
        "ca_file": "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"}


def test_the_kubeconfig_files_are_the_one_named_else_kubeconfigs_list_else_the_home_one(monkeypatch):
    monkeypatch.setenv("KUBECONFIG", "/a:/b::")
    assert kube_client.kubeconfig_paths("/named") == ["/named"]
    assert kube_client.kubeconfig_paths(None) == ["/a", "/b"]
    monkeypatch.delenv("KUBECONFIG")
    monkeypatch.setenv("HOME", "/home/me")
    assert kube_client.kubeconfig_paths(None) == ["/home/me/.kube/config"]


@pytest.mark.parametrize("host, sent, refused", [
    ("http://10.0.0.2:8080", {"token": "t"}, "the connection's token would be sent unencrypted"),
    ("http://k8s.lan:8080", {"exec": {"command": "kubelogin"}}, "the connection's exec plugin's credential would"),
    ("http://10.0.0.2:8080", {"cert_data": "Yw=="}, "the connection's client certificate would"),
    ("http://10.0.0.2:8080", {}, None),  # nothing to leak
    ("http://127.0.0.1:8080", {"token": "t"}, None),  # this machine (a lab's loopback server)
    ("http://localhost:8080", {"token_file": "/t"}, None),
    ("http://[::1]:8080", {"token": "t"}, None),
    ("https://10.0.0.2:6443", {"token": "t"}, None),
])
def test_credentials_never_go_over_plain_http_to_another_machine(host, sent, refused):
    got = plain_http_refusal(dict(sent, host=host))
    if refused is None:
        assert got is None
    else:
        assert got.startswith("server %s is plain http: " % host) and refused in got, got
        assert got.endswith("use the API server's https:// address")


def test_the_modules_connection_refuses_a_token_for_plain_http_to_another_machine():
    with pytest.raises(kube_client.KubeError, match="server http://10.0.0.2:8080 is plain http: the connection's token"):
        kube_client.settings({"host": "http://10.0.0.2:8080", "api_key": "t"})
    assert kube_client.settings({"host": "http://127.0.0.1:8080", "api_key": "t"})["token"] == "t"


def test_inline_data_that_is_not_base64_is_named_by_its_kubeconfig_field():
    with pytest.raises(kube_client.KubeError, match="the kubeconfig's certificate-authority-data is not base64"):
        kube_client.CoreApi({"host": "https://10.0.0.2:6443", "ca_data": "not base64!"})
