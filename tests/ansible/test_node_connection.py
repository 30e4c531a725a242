"""The node modules' Kubernetes connection options (kubernetes.core's names and K8S_AUTH_* variables) and the
action group homecluster.infra.k8s, through ansible-playbook against the lab API server: over TLS with a CA
file, and behind a gate that checks the bearer token (the lab server itself accepts any token)."""
from __future__ import annotations

import json

import pytest

from ansible_peers.token_gate import TokenGate
from hc_ansible import REPO, run_playbook

apiserver = pytest.importorskip("homecluster_lab.apiserver", reason="the lab API server is not importable")

TOKEN = "sa-token-5b0e8d1f2a"  # a bearer token no other output can contain

GROUP_PLAY = """---
- name: Both node modules take their connection from module_defaults
  hosts: localhost
  gather_facts: false
  module_defaults:
    group/homecluster.infra.k8s:
      host: "{{ api_host }}"
      ca_cert: "{{ api_ca }}"
  tasks:
    - name: Cordon with the group's connection
      homecluster.infra.node_cordon:
        name: worker-01
      register: cordon
    - name: Drain (check mode) with the group's connection
      homecluster.infra.node_drain:
        name: worker-01
      check_mode: true
      register: drain

- name: The group's defaults without the CA
  hosts: localhost
  gather_facts: false
  module_defaults:
    group/homecluster.infra.k8s:
      host: "{{ api_host }}"
  tasks:
    - name: Without the CA the server's certificate is not trusted
      homecluster.infra.node_cordon:
        name: worker-01
      register: untrusted
      ignore_errors: true
    - name: Unless validate_certs is false
      homecluster.infra.node_cordon:
        name: worker-01
        validate_certs: false
      register: unverified
    - name: Keep the results
      ansible.builtin.copy:
        content: "{{ [hostvars.localhost.cordon, hostvars.localhost.drain, untrusted, unverified] | to_json }}"
        dest: "{{ result_file }}"
        mode: "0600"
"""

ENV_PLAY = """---
- name: The connection comes from K8S_AUTH_* alone
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Cordon
      homecluster.infra.node_cordon:
        name: worker-01
      register: cordon
      ignore_errors: true
    - name: Keep the result
      ansible.builtin.copy:
        content: "{{ cordon | to_json }}"
        dest: "{{ result_file }}"
        mode: "0600"
"""


def _node(lab, name="worker-01"):
    lab.call(lab.server.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "spec": {}}))


def test_module_defaults_of_the_k8s_group_reach_both_modules_over_tls(tmp_path):
    lab = apiserver.BackgroundLabAPIServer(workdir=tmp_path / "lab-api", tls=True)
    lab.start()
    try:
        _node(lab)
        ca = tmp_path / "ca.pem"
        ca.write_bytes(lab.server.ca_pem)
        play = tmp_path / "group.yml"
        play.write_text(GROUP_PLAY)
        out = tmp_path / "out.json"
        # no kubeconfig anywhere: HOME is empty and KUBECONFIG points at nothing
        proc, _ = run_playbook(tmp_path, str(play), {"api_host": lab.server.url, "api_ca": str(ca),
                                                     "result_file": str(out)},
                               HOME=str(tmp_path), KUBECONFIG=str(tmp_path / "no-such-kubeconfig"))
        assert proc.returncode == 0, proc.stdout + proc.stderr
        cordon, drain, untrusted, unverified = json.loads(out.read_text())
        assert cordon["changed"] and cordon["unschedulable"]
        assert not drain.get("failed") and drain["evicted"] == []
        assert untrusted["failed"] and "CERTIFICATE_VERIFY_FAILED" in untrusted["msg"], untrusted
        assert not unverified.get("failed") and not unverified["changed"]
        assert lab.server.get("nodes", "worker-01")["spec"]["unschedulable"] is True
    finally:
        lab.stop()


@pytest.fixture
def gated(tmp_path):
    lab = apiserver.BackgroundLabAPIServer(workdir=tmp_path / "lab-api")
    lab.start()
    gate = TokenGate(lab.server.url, TOKEN).start()
    yield lab, gate
    gate.stop()
    lab.stop()


def test_k8s_auth_environment_variables_carry_host_and_token(tmp_path, gated):
    lab, gate = gated
    _node(lab)
    play = tmp_path / "env.yml"
    play.write_text(ENV_PLAY)
    results = []
    for n, token in enumerate(("wrong-token", TOKEN)):
        out = tmp_path / ("out-%d.json" % n)
        proc, _ = run_playbook(tmp_path, str(play), {"result_file": str(out)}, ["-vvv"],
                               HOME=str(tmp_path), KUBECONFIG=str(tmp_path / "no-such-kubeconfig"),
                               K8S_AUTH_HOST=gate.url, K8S_AUTH_API_KEY=token)
        results.append(json.loads(out.read_text()))
        assert TOKEN not in proc.stdout + proc.stderr, "the token appeared in the -vvv output"
    refused, accepted = results
    assert refused["failed"] and "401" in refused["msg"]
    assert accepted["changed"] and accepted["unschedulable"], accepted
    assert "Bearer %s" % TOKEN in gate.seen and "Bearer wrong-token" in gate.seen


KUBECONFIG_PLAY = """---
- name: The connection comes from kubeconfig files alone
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Each kubeconfig, one cordon
      homecluster.infra.node_cordon:
        name: worker-01
        kubeconfig: "{{ item }}"
      loop: "{{ kubeconfigs }}"
      register: cordons
      ignore_errors: true
    - name: Keep the results
      ansible.builtin.copy:
        content: "{{ cordons.results | to_json }}"
        dest: "{{ result_file }}"
        mode: "0600"
"""

# a client-go credential plugin, as kubelogin or a cloud CLI is one (the CLI's tests use it too)
EXEC_PLUGIN = REPO / "tests" / "fixtures" / "exec-credential-plugin.sh"


def kubeconfig(path, server: str, cluster: dict, user: dict):
    path.write_text(json.dumps({  # JSON is YAML
        "apiVersion": "v1", "kind": "Config", "current-context": "lab",
        "clusters": [{"name": "lab", "cluster": dict(cluster, server=server)}],
        "users": [{"name": "me", "user": user}],
        "contexts": [{"name": "lab", "context": {"cluster": "lab", "user": "me"}}]}))
    return str(path)


def test_a_kubeconfigs_inline_ca_an_exec_plugin_and_a_refused_field(tmp_path, gated):
    """The CA as certificate-authority-data (written to a private file for the run, then removed), a token from
    an exec plugin (run with the kubeconfig's args and env), and an auth-provider refused naming the field."""
    import base64

    lab, gate = gated
    _node(lab)
    tls = apiserver.BackgroundLabAPIServer(workdir=tmp_path / "tls-api", tls=True)
    tls.start()
    try:
        _node(tls)
        (tmp_path / "bin").mkdir()
        (tmp_path / "bin" / "token-plugin").symlink_to(EXEC_PLUGIN)  # named relative to its kubeconfig
        plugin_log = tmp_path / "plugin.log"
        configs = [
            kubeconfig(tmp_path / "inline-ca", tls.server.url,
                       {"certificate-authority-data": base64.b64encode(tls.server.ca_pem).decode()}, {"token": "x"}),
            kubeconfig(tmp_path / "exec", gate.url, {}, {"exec": {
                "apiVersion": "client.authentication.k8s.io/v1", "command": "./bin/token-plugin",
                "env": [{"name": "PLUGIN_TOKEN", "value": TOKEN}, {"name": "PLUGIN_LOG", "value": str(plugin_log)}],
                "interactiveMode": "Never"}}),
            kubeconfig(tmp_path / "auth-provider", gate.url, {}, {"auth-provider": {"name": "oidc"}}),
        ]
        play = tmp_path / "kubeconfigs.yml"
        play.write_text(KUBECONFIG_PLAY)
        out = tmp_path / "out.json"
        scratch = tmp_path / "scratch"
        scratch.mkdir()
        proc, _ = run_playbook(tmp_path, str(play), {"kubeconfigs": configs, "result_file": str(out)},
                               HOME=str(tmp_path), TMPDIR=str(scratch))
        assert proc.returncode == 0, proc.stdout + proc.stderr
        inline_ca, by_exec, refused = json.loads(out.read_text())
        assert inline_ca["changed"] and not inline_ca.get("failed"), inline_ca
        assert tls.server.get("nodes", "worker-01")["spec"]["unschedulable"] is True
        assert by_exec["changed"] and not by_exec.get("failed"), by_exec
        assert gate.seen == ["Bearer %s" % TOKEN] * 2  # the read and the patch, with the plugin's token
        asked = [json.loads(line) for line in plugin_log.read_text().splitlines()]  # once, not interactive
        assert asked == [{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
                          "spec": {"interactive": False}}]
        assert refused["failed"] and "user me sets auth-provider, which these modules do not support: " \
            "auth-provider plugins were removed from kubectl 1.26; use an exec credential plugin" in refused["msg"]
        assert not [p for p in scratch.rglob("*") if p.name.startswith("homecluster-kube-")], \
            "the CA written for the run was left behind"
    finally:
        tls.stop()
