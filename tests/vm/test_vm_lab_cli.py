"""`homecluster lab --machines vm` as a person runs it: ready line, a VM powered on through its slot's BMC
with ipmitool, then Ctrl-C, after which no qemu or ipmi_sim process of the lab is left."""
from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from homecluster_lab.vm.machine import leftover_processes

pytestmark = [pytest.mark.vm, pytest.mark.lab]

HOMECLUSTER = Path(sys.executable).parent / "homecluster"


def kubectl_json(kubeconfig: str, *args: str) -> dict:
    out = subprocess.run(["kubectl", "--kubeconfig", kubeconfig, *args, "-o", "json"], capture_output=True,
                         text=True, timeout=20, check=True)
    return json.loads(out.stdout)


def test_lab_with_vm_machines_starts_powers_a_vm_and_leaves_nothing_behind(image, tmp_path):
    workdir = tmp_path / "lab"
    env = dict(os.environ, HOMECLUSTER_VM_BUILD_DIR=str(image.kernel.parent))
    proc = subprocess.Popen([str(HOMECLUSTER), "lab", "--machines", "vm", "--slots", "2", "--driver", "mixed",
                             "--no-operator", "--provider-address", "127.0.0.1:0", "--workdir", str(workdir),
                             "--refresh", "5"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
                            start_new_session=True)
    lines: list[str] = []
    try:
        deadline = time.monotonic() + 60
        while not any(line.startswith("lab ready:") for line in lines):
            line = proc.stdout.readline()
            assert line or proc.poll() is None, f"the lab exited {proc.poll()}: {''.join(lines)}"
            lines.append(line)
            assert time.monotonic() < deadline, "".join(lines)
        text = "".join(lines)
        assert "machines     2 qemu VMs, 1 ipmi, 1 redfish" in text, text
        kubeconfig = next(l for l in lines if l.startswith("lab ready:")).split("kubeconfig=")[1].split()[0]

        slot = kubectl_json(kubeconfig, "get", "nodes.infra.homecluster.dev", "worker-01")
        ipmi = slot["spec"]["power"]["ipmi"]
        secret = kubectl_json(kubeconfig, "get", "secret", "-n", "homecluster-system",
                              ipmi["credentialsSecretRef"]["name"])
        user, password = (base64.b64decode(secret["data"][k]).decode() for k in ("username", "password"))
        on = subprocess.run(["ipmitool", "-I", "lanplus", "-C", "3", "-H", ipmi["address"], "-p", str(ipmi["port"]),
                             "-U", user, "-E", "chassis", "power", "on"],
                            env=dict(os.environ, IPMI_PASSWORD=password), capture_output=True, text=True, timeout=30)
        assert on.returncode == 0, on.stderr
        assert any("qemu" in Path(f"/proc/{pid}/cmdline").read_text() for pid in leftover_processes(workdir)), \
            "the IPMI power-on started the VM's qemu process"
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)
    assert proc.returncode == 0
    assert leftover_processes(workdir) == [], "qemu/ipmi_sim processes outlived `homecluster lab`"
