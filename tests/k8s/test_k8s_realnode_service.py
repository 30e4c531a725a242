"""A pod from an image built here runs on the lab's real node, and kube-proxy routes its Service to it.

The controller image (`make images`) is imported into the node's containerd under the name the chart uses;
the pod serves /etc with Python's http.server (the image's own Python), and /hostname answers the pod's name,
which the kubelet writes there: an answer through the Service's ClusterIP is that pod's."""
from __future__ import annotations

import asyncio
import ipaddress
import subprocess

import pytest
from k8s_install_proof import BOUND
from support.waits import until
from k8s_realnode import admin, node, skip_unless_here  # noqa: F401  fixtures

from homecluster_lab.k8s import nodeconfig, nodeimages

pytestmark = [pytest.mark.asyncio(loop_scope="module"), skip_unless_here("controller")]

NS = "default"


def web_pod(node: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web", "namespace": NS, "labels": {"app": "web"}},
            "spec": {"nodeSelector": {"kubernetes.io/hostname": node}, "automountServiceAccountToken": False,
                     "securityContext": {"runAsUser": 65532, "runAsNonRoot": True},
                     "containers": [{"name": "web", "image": nodeimages.reference("controller"),
                                     "imagePullPolicy": "Never",
                                     "command": ["python3", "-m", "http.server", "8080", "--directory", "/etc"],
                                     "ports": [{"containerPort": 8080}],
                                     "securityContext": {"readOnlyRootFilesystem": True,
                                                         "allowPrivilegeEscalation": False,
                                                         "capabilities": {"drop": ["ALL"]}}}]}}


WEB_SERVICE = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": NS},
               "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]}}


async def _http_get(host: str, port: int, path: str) -> str | None:
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), 2)
    except (OSError, asyncio.TimeoutError):
        return None
    writer.write(f"GET {path} HTTP/1.0\r\nHost: {host}\r\n\r\n".encode())
    answer = await asyncio.wait_for(reader.read(), 5)
    writer.close()
    return answer.decode(errors="replace")


async def test_a_pod_of_a_locally_built_image_runs_and_its_service_routes_to_it(node, admin):
    pods = f"/api/v1/namespaces/{NS}/pods"
    await admin.create(pods, web_pod(node.name))
    service = await admin.create(f"/api/v1/namespaces/{NS}/services", WEB_SERVICE)

    async def running():
        pod = await admin.get(f"{pods}/web")
        return pod if (pod.get("status") or {}).get("phase") == "Running" else None

    pod = await until(running, "pod web to run", BOUND)
    assert pod["spec"]["nodeName"] == node.name
    assert ipaddress.ip_address(pod["status"]["podIP"]) in ipaddress.ip_network(nodeconfig.POD_CIDR)

    cluster_ip = service["spec"]["clusterIP"]

    async def through_service():
        answer = await _http_get(cluster_ip, 80, "/hostname")
        return answer if answer and answer.startswith("HTTP/1.0 200") else None

    answer = await until(through_service, f"an answer from web through its Service {cluster_ip}:80", BOUND)
    assert answer.rstrip().endswith("\nweb"), answer
    rules = subprocess.run(["iptables-save", "-t", "nat"], capture_output=True, text=True).stdout
    assert f"-d {cluster_ip}/32 -p tcp -m comment --comment \"{NS}/web cluster IP\"" in rules
