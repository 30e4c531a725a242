"""A pod on the real node's pod network reaches a slot's BMC and boot port where the lab with a real node binds them.

Needs `make realnode` only (not `make images`): the pod's image is Debian's static busybox (busybox-static), as a
one-file image written here (ociarchive, as the pause image). The lab (`--control-plane kubernetes --real-node`,
no operator) binds the Redfish BMC and boot port of its one machine on the node's bridge address (10.244.77.1,
the pods' gateway). A pod confined as a lifecycle Job's is (non-root, read-only root filesystem, every capability
dropped, RuntimeDefault seccomp, the namespace's Pod Security `restricted`) reads the slot's Secret from its
mounted files, posts the Redfish Reset with them to the endpoint the slot's spec.power names, and waits for the
machine's OS on the port its spec.bootCheck names: the machine is on, the pod Succeeded. With the BMC on loopback
(the lab without a real node), the same pod could not reach it.
"""
from __future__ import annotations

import ipaddress
import shutil
import subprocess
from pathlib import Path

import pytest
from k8s_install_proof import BOUND
from support.kube import default_account
from support.waits import until

from homecluster_lab.config import LabConfig
from homecluster_lab.k8s import nodeconfig, ociarchive, realnode
from homecluster_lab.k8s.labcluster import RealLabCluster

BUSYBOX = Path("/bin/busybox")


def busybox_missing() -> str | None:
    if shutil.which("busybox") is None or not BUSYBOX.exists():
        return f"{BUSYBOX} is missing (Debian: busybox-static)"
    if "statically linked" not in subprocess.run(["file", "-L", str(BUSYBOX)], capture_output=True, text=True).stdout:
        return f"{BUSYBOX} is not statically linked: install Debian's busybox-static"
    return None


pytestmark = [pytest.mark.asyncio(loop_scope="module"),
              pytest.mark.skipif(realnode.missing_reason() is not None, reason=str(realnode.missing_reason())),
              pytest.mark.skipif(busybox_missing() is not None, reason=str(busybox_missing()))]
SLOT = "worker-01"
IMAGE = "localhost/homecluster-lab-busybox:test"
NS = "homecluster-system"
# the slot's Secret as files; the Reset through the endpoint the slot names, then the OS's port
SCRIPT = """set -eu
user=$(cat /credentials/username); password=$(cat /credentials/password)
wget -q -O - --header 'Content-Type: application/json' --post-data '{"ResetType": "On"}' \\
  "http://$user:$password@$BMC/redfish/v1/Systems/$SYSTEM/Actions/ComputerSystem.Reset"
for i in $(seq 1 120); do
  if nc -w 1 "$BOOT_HOST" "$BOOT_PORT" </dev/null | grep -q SSH; then echo "the OS answers"; exit 0; fi
  sleep 1
done
echo "the OS never answered on $BOOT_HOST:$BOOT_PORT"; exit 1
"""


def reach_pod(slot: dict) -> dict:
    redfish, boot = slot["spec"]["power"]["redfish"], slot["spec"]["bootCheck"]
    confined = {"readOnlyRootFilesystem": True, "allowPrivilegeEscalation": False, "runAsNonRoot": True,
                "capabilities": {"drop": ["ALL"]}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "reach-bmc", "namespace": NS},
            "spec": {"nodeSelector": {"kubernetes.io/hostname": realnode.NODE}, "restartPolicy": "Never",
                     "automountServiceAccountToken": False, "enableServiceLinks": False,
                     "securityContext": {"runAsUser": 1000, "runAsGroup": 1000, "fsGroup": 1000, "runAsNonRoot": True,
                                         "seccompProfile": {"type": "RuntimeDefault"}},
                     "containers": [{"name": "reach", "image": IMAGE, "imagePullPolicy": "Never",
                                     "args": ["sh", "-c", SCRIPT],
                                     "env": [{"name": "BMC", "value": redfish["endpoint"].removeprefix("http://")},
                                             {"name": "SYSTEM", "value": redfish["systemId"]},
                                             {"name": "BOOT_HOST", "value": boot["host"]},
                                             {"name": "BOOT_PORT", "value": str(boot["port"])}],
                                     "volumeMounts": [{"name": "credentials", "mountPath": "/credentials",
                                                       "readOnly": True}],
                                     "securityContext": confined}],
                     "volumes": [{"name": "credentials", "secret": {
                         "secretName": f"{SLOT}-bmc", "defaultMode": 0o440,
                         "items": [{"key": "username", "path": "username"}, {"key": "password", "path": "password"}]}}]}}


async def test_a_confined_pod_powers_a_machine_through_its_bmc_on_the_nodes_bridge(tmp_path: Path):
    archive = tmp_path / "busybox.tar"
    ociarchive.write_single_binary_image(BUSYBOX, IMAGE, archive, name="busybox")
    config = LabConfig(slots=1, driver="redfish", boot_seconds=1, provider_address="127.0.0.1:0",
                       workdir=tmp_path / "lab", operator=False, control_plane="kubernetes", real_node=True)
    lab = RealLabCluster(config)
    lab.node_images = (archive,)
    async with lab:
        slot = await lab.api.kube.get(f"/apis/infra.homecluster.dev/v2alpha1/nodes/{SLOT}")
        assert slot["spec"]["power"]["redfish"]["endpoint"].startswith(f"http://{nodeconfig.GATEWAY}:")
        assert slot["spec"]["bootCheck"]["host"] == nodeconfig.GATEWAY
        assert lab.machine(SLOT).power_state() == "off"
        pods = f"/api/v1/namespaces/{NS}/pods"
        await until(lambda: default_account(lab.api.kube, NS), f"the default ServiceAccount of {NS}", BOUND)
        await lab.api.kube.create(pods, reach_pod(slot))
        logs = lab.workdir / "realnode" / "varlog" / "pods"

        async def finished() -> dict | None:
            pod = await lab.api.kube.get(f"{pods}/reach-bmc")
            return pod if pod["status"].get("phase") in ("Succeeded", "Failed") else None

        def log() -> str:
            return "\n".join(p.read_text() for p in logs.glob(f"{NS}_reach-bmc_*/reach/*.log"))

        pod = await until(finished, "the pod to finish", BOUND, detail=log)
        assert pod["status"]["phase"] == "Succeeded", (pod["status"], log())
        assert "the OS answers" in log()
        assert ipaddress.ip_address(pod["status"]["podIP"]) in ipaddress.ip_network(nodeconfig.POD_CIDR)
        assert lab.machine(SLOT).power_state() == "on"
        assert lab.machine(SLOT).credentials.password not in log()
