"""The official Python clients against the lab, the request log, write faults, TLS, start-up time and
loading CRDs from a directory."""
from __future__ import annotations

import asyncio
import json
import subprocess
import time

import pytest

from homecluster_lab.apiserver import BackgroundLabAPIServer, LabAPIServer

from lab_objects import WIDGET_CRD

pytestmark = pytest.mark.lab


def test_sync_kubernetes_client_on_a_background_server(tmp_path):
    import kubernetes
    from kubernetes.client.rest import ApiException

    with BackgroundLabAPIServer(workdir=tmp_path) as bg:
        api = kubernetes.config.new_client_from_config(str(bg.server.kubeconfig_path))
        core = kubernetes.client.CoreV1Api(api)
        core.create_namespace(kubernetes.client.V1Namespace(metadata=kubernetes.client.V1ObjectMeta(name="x")))
        pod = kubernetes.client.V1Pod(metadata=kubernetes.client.V1ObjectMeta(name="p", labels={"a": "b"}),
                                      spec=kubernetes.client.V1PodSpec(node_name="n1", containers=[
                                          kubernetes.client.V1Container(name="c", image="busybox")]))
        created = core.create_namespaced_pod("x", pod)
        assert created.status.phase == "Pending" and created.metadata.uid
        pods = core.list_pod_for_all_namespaces(field_selector="spec.nodeName=n1", label_selector="a=b")
        assert [p.metadata.name for p in pods.items] == ["p"]
        core.patch_namespaced_pod_status("p", "x", {"status": {"phase": "Running"}})
        assert core.read_namespaced_pod("p", "x").status.phase == "Running"
        with pytest.raises(ApiException) as exc:
            core.read_namespaced_pod("missing", "x")
        assert exc.value.status == 404 and json.loads(exc.value.body)["reason"] == "NotFound"
        # the watch helper streams from a list's resourceVersion
        w = kubernetes.watch.Watch()
        rv = core.list_namespaced_pod("x").metadata.resource_version
        bg.call(bg.server.patch("pods", "p", {"metadata": {"labels": {"c": "d"}}}, namespace="x"))
        events = [e for e in w.stream(core.list_namespaced_pod, "x", resource_version=rv, timeout_seconds=1)]
        assert [(e["type"], e["object"].metadata.labels.get("c")) for e in events] == [("MODIFIED", "d")]
        # kubectl in a blocking subprocess works against a background server
        out = subprocess.run(["kubectl", "--kubeconfig", str(bg.server.kubeconfig_path), "get", "pods", "-A"],
                             capture_output=True, text=True, env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin:"
                                                                  "/usr/local/bin"}, check=True).stdout
        assert "p " in out.splitlines()[1] + " "


async def test_kubernetes_asyncio_client(lab_api, widgets):
    from kubernetes_asyncio import client, config

    api = await config.new_client_from_config(str(lab_api.kubeconfig_path))
    async with api:
        custom = client.CustomObjectsApi(api)
        await custom.create_cluster_custom_object("lab.homecluster.dev", "v1", "widgets", {
            "apiVersion": "lab.homecluster.dev/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 1}})
        await custom.patch_cluster_custom_object_status("lab.homecluster.dev", "v1", "widgets", "w",
                                                        {"status": {"phase": "Ready"}},
                                                        _content_type="application/merge-patch+json")
        got = await custom.get_cluster_custom_object("lab.homecluster.dev", "v1", "widgets", "w")
        assert got["status"] == {"phase": "Ready"} and got["spec"]["color"] == "red"
        batch = client.BatchV1Api(api)
        job = await batch.create_namespaced_job("default", {
            "apiVersion": "batch/v1", "kind": "Job", "metadata": {"generateName": "startup-"},
            "spec": {"template": {"spec": {"restartPolicy": "Never",
                                           "containers": [{"name": "c", "image": "x"}]}}}})
        assert job.metadata.name.startswith("startup-") and job.status.active is None


async def test_request_log_and_write_faults(lab_api, kubectl):
    lab_api.audit.clear()
    (await kubectl("get", "configmaps")).check()
    assert lab_api.audit.count("configmaps", verbs=["list"], user_agent="kubectl") == 1
    assert lab_api.audit.count(verbs=["discovery"]) >= 1
    lab_api.faults.fail_next("configmaps", count=1, code=409)
    run = await kubectl("create", "configmap", "c")
    assert run.rc != 0 and "Operation cannot be fulfilled on configmaps" in run.err
    lab_api.faults.fail_next("configmaps", count=1, code="timeout")
    lab_api.faults.timeout_delay = 0.2
    run = await kubectl("create", "configmap", "c")
    assert run.rc != 0 and "Timeout: request did not complete within the allotted timeout" in run.err
    (await kubectl("create", "configmap", "c")).check()
    writes = lab_api.audit.writes("configmaps")
    assert [e.code for e in writes] == [409, 504, 201]
    assert writes[-1].rv == lab_api.get("configmaps", "c", "default")["metadata"]["resourceVersion"]
    assert all(e.verb == "create" and e.namespace == "default" for e in writes)


async def test_kubectl_create_secret_and_job_table(lab_api, kubectl):
    # kubectl's generators send protobuf bodies
    (await kubectl("create", "secret", "generic", "bmc", "--from-literal=username=admin",
                   "--from-literal=password=s3cret")).check()
    secret = lab_api.get("secrets", "bmc", "default")
    assert secret["type"] == "Opaque" and secret["data"]["username"] == "YWRtaW4="
    await lab_api.create({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "default"},
                          "spec": {"completions": 1, "template": {"spec": {"containers": [{"name": "c"}]}}},
                          "status": {"succeeded": 1, "startTime": "2026-01-01T00:00:00Z",
                                     "completionTime": "2026-01-01T00:00:42Z",
                                     "conditions": [{"type": "Complete", "status": "True"}]}}, keep_status=True)
    lines = (await kubectl("get", "jobs")).check().out.splitlines()
    assert lines[0].split() == ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"]
    assert lines[1].split()[:4] == ["j", "Complete", "1/1", "42s"]


async def test_tls_and_startup_time(tmp_path, kubectl):
    started = time.monotonic()
    async with LabAPIServer(tls=True, workdir=tmp_path / "tls") as api:
        took = time.monotonic() - started
        print(f"TLS lab API server up in {took:.2f}s")
        assert took < 10, "a hang, not a speed target: the figure above is the measurement"
        assert api.url.startswith("https://")
        proc = await asyncio.create_subprocess_exec(
            "kubectl", "--kubeconfig", str(api.kubeconfig_path), "get", "namespaces", "-o", "name",
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env={"HOME": str(tmp_path),
                                                                                 "PATH": "/usr/bin:/bin"})
        out, err = await proc.communicate()
        assert proc.returncode == 0, err.decode()
        assert "namespace/default" in out.decode().split()


async def test_crds_loaded_from_directory(tmp_path):
    crd_dir = tmp_path / "crd"
    crd_dir.mkdir()
    (crd_dir / "widgets.yaml").write_text(json.dumps(WIDGET_CRD))
    (crd_dir / "kustomization.yaml").write_text("resources: [widgets.yaml]\n")
    async with LabAPIServer(crd_dir=crd_dir, workdir=tmp_path / "w") as api:
        crd = api.get("customresourcedefinitions", "widgets.lab.homecluster.dev")
        assert {c["type"] for c in crd["status"]["conditions"]} == {"Established", "NamesAccepted"}
        await api.create({"apiVersion": "lab.homecluster.dev/v1", "kind": "Widget", "metadata": {"name": "w"},
                          "spec": {"size": 1}})
        # deleting the CRD removes its objects and stops serving it
        await api.delete("customresourcedefinitions", "widgets.lab.homecluster.dev")
        for _ in range(100):
            if api.get("customresourcedefinitions", "widgets.lab.homecluster.dev") is None:
                break
            await asyncio.sleep(0.05)
        assert api.registry.lookup("lab.homecluster.dev", "v1", "widgets") is None
