"""The manager's Deployment: restricted security, one replica with Recreate, the namespace from the pod,
probes on the health port, and flags the operator's own parser accepts."""
from __future__ import annotations

import argparse
import importlib

import pytest

from install_helpers import find

OPERATOR_MODULE = "homecluster.operator.main"


@pytest.fixture(scope="module")
def deployment(default_objects):
    (dep,) = find(default_objects, "Deployment", "homecluster-controller")
    return dep


@pytest.fixture(scope="module")
def container(deployment):
    (c,) = deployment["spec"]["template"]["spec"]["containers"]
    return c


def test_one_replica_recreated_never_two(deployment):
    assert deployment["spec"]["replicas"] == 1
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}


def test_runs_restricted(deployment, container):
    pod = deployment["spec"]["template"]["spec"]
    sc = container["securityContext"]
    assert pod["securityContext"]["runAsNonRoot"] is True and sc["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] != 0
    assert sc["readOnlyRootFilesystem"] is True
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"] == {"drop": ["ALL"]}
    assert sc["seccompProfile"]["type"] == "RuntimeDefault"
    assert not pod.get("hostNetwork") and not sc.get("privileged")
    # a read-only root filesystem needs a writable /tmp
    tmp = next(m for m in container["volumeMounts"] if m["mountPath"] == "/tmp")
    assert any(v["name"] == tmp["name"] and "emptyDir" in v for v in pod["volumes"])
    assert container["resources"]["requests"] and container["resources"]["limits"]


def test_namespace_comes_from_the_downward_api_never_from_args(container, default_objects):
    env = {e["name"]: e for e in container.get("env", [])}
    assert env["POD_NAMESPACE"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace"
    words = " ".join(container.get("command", []) + container.get("args", []))
    assert "--namespace" not in words
    for ns in {o["metadata"]["namespace"] for o in default_objects if o["metadata"].get("namespace")}:
        assert ns not in words, f"the container's command line hard-codes the namespace {ns!r}"


def test_ports_and_probes(container):
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"webhook": 9443, "grpc": 50051, "metrics": 8080, "health": 8081}
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        # kopf's liveness endpoint: /healthz, the only path `homecluster run --health-address` serves
        assert container[probe]["httpGet"] == {"path": "/healthz", "port": "health"}
    args = container["args"]
    assert "--health-address=:8081" in args and "--metrics-address=:8080" in args
    assert "--webhook-address=:9443" in args and "--provider-address=:50051" in args


def test_services_reach_named_ports(default_objects, container):
    names = {p["name"] for p in container["ports"]}
    selector_ok = find(default_objects, "Deployment")[0]["spec"]["template"]["metadata"]["labels"]
    for svc in find(default_objects, "Service"):
        assert all(selector_ok.get(k) == v for k, v in svc["spec"]["selector"].items()), svc["metadata"]["name"]
        for port in svc["spec"]["ports"]:
            assert port["targetPort"] in names, f"Service {svc['metadata']['name']} targets {port['targetPort']}"


def test_cert_volumes_are_the_secrets_certificates_make(deployment, default_objects, container):
    pod = deployment["spec"]["template"]["spec"]
    secrets = {v["secret"]["secretName"] for v in pod["volumes"] if "secret" in v}
    made = {c["spec"]["secretName"] for c in find(default_objects, "Certificate")}
    assert secrets <= made, f"the Deployment mounts Secrets no Certificate makes: {secrets - made}"
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    by_secret = {v["secret"]["secretName"]: mounts[v["name"]] for v in pod["volumes"] if "secret" in v}
    args = container["args"]
    assert f"--webhook-cert={by_secret['homecluster-webhook-cert']}/tls.crt" in args
    assert f"--provider-client-ca={by_secret['homecluster-provider-server']}/ca.crt" in args


def test_operator_accepts_these_flags(container):
    """Coordination with `homecluster run`: every flag the Deployment passes exists in its parser."""
    try:
        module = importlib.import_module(OPERATOR_MODULE)
    except ModuleNotFoundError as exc:
        if exc.name and OPERATOR_MODULE.startswith(exc.name):
            pytest.skip(f"{OPERATOR_MODULE} is not in the tree yet")
        raise
    parser = argparse.ArgumentParser(prog="homecluster run", exit_on_error=False)
    module.add_arguments(parser)
    known = {s for a in parser._actions for s in a.option_strings}
    unknown = [a.split("=", 1)[0] for a in container["args"] if a.split("=", 1)[0] not in known]
    assert unknown == [], f"homecluster run does not accept {unknown}; config/manager/manager.yaml and " \
                          f"{OPERATOR_MODULE} must agree"
    parser.parse_args(container["args"])
