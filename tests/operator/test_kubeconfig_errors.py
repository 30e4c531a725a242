"""A kubeconfig that cannot work is refused while loading, with one error naming the file, the entry, the
field and the fix (never a traceback from the first request), and never quoting a token or a key.

The TLS material is checked with the same ssl module the client uses; certificates come from homecluster.tls.
"""
from __future__ import annotations

import base64

import pytest
import yaml

from homecluster import tls
from homecluster.clikube import run_verb
from homecluster.kube.kubeconfig import KubeconfigError, load

TOKEN = "s3cr3t-t0ken-value"
KEY_SECRET = "SECRETKEYMATERIAL"


def _b64(data: bytes | str) -> str:
    return base64.b64encode(data.encode() if isinstance(data, str) else data).decode()


def _write(path, cluster, user, *, context_user: str = "u") -> str:
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "k", "cluster": cluster}], "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": context_user}}]}))
    return str(path)


def _error(path) -> str:
    with pytest.raises(KubeconfigError) as info:
        load(str(path))
    text = str(info.value)
    assert str(path) in text, text
    assert TOKEN not in text and KEY_SECRET not in text and _b64(KEY_SECRET) not in text, text
    return text


@pytest.fixture(scope="module")
def pki():
    ca = tls.make_ca("kubeconfig-errors-ca")
    return ca, tls.issue(ca, "alice", server=False, client=True)


def test_a_missing_ca_file_names_the_cluster_the_field_and_the_path(tmp_path):
    config = tmp_path / "config"
    _write(config, {"server": "https://10.0.0.1:6443", "certificate-authority": "missing-ca.pem"}, {"token": TOKEN})
    text = _error(config)
    assert 'cluster "k": certificate-authority ' in text and str(tmp_path / "missing-ca.pem") in text, text
    assert "No such file or directory" in text and "certificate-authority-data" in text, text


def test_garbage_ca_data_names_the_field_and_the_fix(tmp_path):
    config = tmp_path / "config"
    _write(config, {"server": "https://10.0.0.1:6443", "certificate-authority-data": _b64("garbage")},
           {"token": TOKEN})
    text = _error(config)
    assert 'cluster "k": certificate-authority-data is not a PEM CA certificate' in text, text
    assert "kubectl config view --raw" in text, text


def test_a_bad_client_key_is_named_without_quoting_it(tmp_path, pki):
    _, client = pki
    config = tmp_path / "config"
    bad_key = f"-----BEGIN PRIVATE KEY-----\n{KEY_SECRET}\n-----END PRIVATE KEY-----\n"
    _write(config, {"server": "https://10.0.0.1:6443"},
           {"client-certificate-data": _b64(client.cert_pem), "client-key-data": _b64(bad_key)})
    text = _error(config)
    assert 'user "u": client-certificate-data and client-key-data are not a certificate and its key' in text, text


def test_a_missing_client_key_file_names_the_field_and_the_path(tmp_path, pki):
    _, client = pki
    client.write(tmp_path, "alice")
    config = tmp_path / "config"
    _write(config, {"server": "https://10.0.0.1:6443"}, {"client-certificate": "alice.crt", "client-key": "gone.key"})
    text = _error(config)
    assert 'user "u": client-key ' in text and str(tmp_path / "gone.key") in text, text
    assert "No such file or directory" in text, text


def test_a_certificate_without_its_key_is_refused(tmp_path, pki):
    _, client = pki
    config = tmp_path / "config"
    _write(config, {"server": "https://10.0.0.1:6443"}, {"client-certificate-data": _b64(client.cert_pem)})
    assert 'user "u": client-certificate-data is set but no client-key' in _error(config)


@pytest.mark.parametrize("section", ["cluster", "user"])
def test_an_entry_that_is_not_a_mapping_is_named(tmp_path, section):
    config = tmp_path / "config"
    cluster, user = {"server": "https://10.0.0.1:6443"}, {"token": TOKEN}
    _write(config, TOKEN if section == "cluster" else cluster, TOKEN if section == "user" else user)
    name = "k" if section == "cluster" else "u"
    assert f'{section} "{name}": {section} must be a mapping of fields' in _error(config)


def test_a_context_naming_an_undefined_user_is_refused(tmp_path):
    config = tmp_path / "config"
    _write(config, {"server": "https://10.0.0.1:6443"}, {"token": TOKEN}, context_user="ghost")
    assert 'user "ghost" was not found for context "c"' in _error(config)


def test_a_context_naming_an_undefined_cluster_is_refused_with_the_fix(tmp_path):
    config = tmp_path / "config"
    _write(config, {"server": "https://10.0.0.1:6443"}, {"token": TOKEN})
    config.write_text(config.read_text().replace("cluster: k", "cluster: nowhere"))
    text = _error(config)
    assert 'context "c" names the cluster "nowhere", which is not defined: add it under clusters:' in text, text
    assert "(known: k)" in text, text


@pytest.mark.parametrize("user, field", [({"token": TOKEN}, "token"), ({"tokenFile": "token"}, "tokenFile"),
                                         ({"client-certificate": "a.crt", "client-key": "a.key"},
                                          "client-certificate")])
def test_credentials_over_plain_http_to_another_host_are_refused(tmp_path, user, field):
    (tmp_path / "token").write_text(TOKEN)
    config = tmp_path / "config"
    _write(config, {"server": "http://api.example:8080"}, user)
    text = _error(config)
    assert 'cluster "k": server http://api.example:8080 is plain http' in text and f'user "u" has a {field}' in text
    assert "https://" in text


def test_plain_http_without_credentials_or_to_this_machine_is_allowed(tmp_path):
    config = tmp_path / "config"
    _write(config, {"server": "http://api.example:8080"}, {})
    assert load(str(config)).current_token() is None
    _write(config, {"server": "http://127.0.0.1:8080"}, {"token": TOKEN})
    assert load(str(config)).current_token() == TOKEN, "the lab's API server: nothing leaves the machine"


@pytest.mark.parametrize("value", ["false", "true", 0, "yes"])
def test_insecure_skip_tls_verify_must_be_a_yaml_bool(tmp_path, value):
    config = tmp_path / "config"
    _write(config, {"server": "https://10.0.0.1:6443", "insecure-skip-tls-verify": value}, {"token": TOKEN})
    assert 'cluster "k": insecure-skip-tls-verify must be true or false (a YAML bool, unquoted)' in _error(config)


def test_insecure_skip_tls_verify_false_verifies(tmp_path):
    config = tmp_path / "config"
    _write(config, {"server": "https://10.0.0.1:6443", "insecure-skip-tls-verify": False}, {"token": TOKEN})
    assert load(str(config)).insecure is False


def test_the_token_file_wins_over_the_inline_token_from_the_start(tmp_path):
    (tmp_path / "token").write_text("from-the-file\n")
    config = tmp_path / "config"
    _write(config, {"server": "https://10.0.0.1:6443"}, {"token": "inline", "tokenFile": "token"})
    connection = load(str(config))
    assert connection.current_token() == "from-the-file" and connection.headers() == {
        "Authorization": "Bearer from-the-file"}
    (tmp_path / "token").unlink()
    assert load(str(config)).current_token() == "inline", "an unreadable file falls back to the token (client-go)"


def test_a_cli_verb_prints_the_error_as_one_line(tmp_path, capsys):
    config = tmp_path / "config"
    _write(config, {"server": "https://10.0.0.1:6443", "certificate-authority": "missing-ca.pem"}, {"token": TOKEN})

    async def verb() -> int:
        load(str(config))
        return 0

    assert run_verb(verb()) == 2  # USAGE: the kubeconfig is to be fixed, not the pool (docs/cli.md)
    err = capsys.readouterr().err
    assert err.startswith("error: no usable kubeconfig: ") and err.count("\n") == 1 and "certificate-authority" in err
    assert "set KUBECONFIG" not in err, "the error names its own fix; the generic hint is not added to it"
    assert TOKEN not in err
