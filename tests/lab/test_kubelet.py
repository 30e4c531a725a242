"""The lab's kubelet against the lab's API server, over real HTTP (node/kube.py on kubernetes_asyncio's transport)."""
from __future__ import annotations

import asyncio
import subprocess

import pytest

from homecluster_lab.machines.boot import Faults, Timing
from homecluster_lab.machines.fleet import Fleet, MachineSpec
from homecluster_lab.machines.machine import Credentials, Identity, SimMachine, Taint
from homecluster_lab.node.kube import Kube
from homecluster_lab.node.kubelet import Kubelet

try:
    from homecluster_lab.apiserver import LabAPIServer
    _IMPORT_ERROR = ""
except ImportError as exc:  # the API server is another part of the lab; say why these tests cannot run
    LabAPIServer = None
    _IMPORT_ERROR = str(exc)

pytestmark = [pytest.mark.lab,
              pytest.mark.skipif(LabAPIServer is None,
                                 reason=f"the lab API server is not importable: {_IMPORT_ERROR}")]

CILIUM = Taint("node.cilium.io/agent-not-ready")
CORDON_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
CA_TAINT = {"key": "ToBeDeletedByClusterAutoscaler", "value": "1700000000", "effect": "NoSchedule"}


@pytest.fixture
async def api():
    async with LabAPIServer() as server:
        yield server


@pytest.fixture
async def kube(api):
    async with Kube(str(api.kubeconfig_path)) as client:
        yield client


def make_machine(name="m1", *, boot=0.5, clear=0.5, unknown=0.6, **faults) -> SimMachine:
    ident = Identity(name, f"slot-{name}", "52:54:00:00:00:01", f"node-{name}", f"k3s://node-{name}",
                     labels={"infra.homecluster.dev/group": "small"}, readiness_taints=(CILIUM,))
    return SimMachine(ident, timing=Timing(boot_seconds=boot, ready_taints_clear_seconds=clear,
                                           unknown_after_seconds=unknown),
                      faults=Faults(**faults), credentials=Credentials("admin", "pw"))


@pytest.fixture
async def kubelet_for(kube):
    started: list[Kubelet] = []

    def start(machine: SimMachine, **settings) -> Kubelet:
        settings = {"lease_seconds": 0.5, "status_seconds": 2.0, "retry_seconds": 0.2, **settings}
        kubelet = Kubelet(machine, kube, **settings)
        kubelet.start()
        started.append(kubelet)
        return kubelet
    yield start
    for kubelet in started:
        await kubelet.stop()


def ready_of(node: dict | None) -> str | None:
    if not node:
        return None
    return next((c["status"] for c in node.get("status", {}).get("conditions", []) if c["type"] == "Ready"), None)


def taint_keys(node: dict) -> list[str]:
    return [t["key"] for t in node.get("spec", {}).get("taints") or []]


async def until(predicate, timeout: float) -> float:
    """Seconds it took for predicate() to hold; fails the test on timeout."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    while not predicate():
        if loop.time() - start > timeout:
            pytest.fail(f"condition not met within {timeout}s")
        await asyncio.sleep(0.02)
    return loop.time() - start


async def test_powered_on_machine_registers_ready_within_boot_delay_plus_one_second(api, kubelet_for):
    machine = make_machine()
    kubelet_for(machine)
    await asyncio.sleep(0.3)
    assert api.get("nodes", "node-m1") is None  # off: nothing registers
    machine.power_on()
    took = await until(lambda: ready_of(api.get("nodes", "node-m1")) == "True", timeout=0.5 + 1.0)
    assert took >= 0.45  # not before the boot delay
    node = api.get("nodes", "node-m1")
    assert node["spec"]["providerID"] == "k3s://node-m1"
    assert node["metadata"]["labels"]["kubernetes.io/hostname"] == "node-m1"
    assert node["metadata"]["labels"]["infra.homecluster.dev/group"] == "small"
    assert node["status"]["capacity"]["pods"] == "110" and node["status"]["nodeInfo"]["kubeletVersion"]
    assert taint_keys(node) == [CILIUM.key]  # readiness taint until it clears
    await until(lambda: taint_keys(api.get("nodes", "node-m1")) == [], timeout=1.5)
    await until(lambda: api.get("leases", "node-m1", "kube-node-lease") is not None, timeout=1.0)
    lease = api.get("leases", "node-m1", "kube-node-lease")
    assert lease["spec"]["holderIdentity"] == "node-m1"
    first_renew = lease["spec"]["renewTime"]
    await until(lambda: api.get("leases", "node-m1", "kube-node-lease")["spec"]["renewTime"] != first_renew, 1.5)


async def test_power_off_goes_not_ready_then_unknown(api, kubelet_for):
    machine = make_machine()
    kubelet_for(machine)
    machine.power_on()
    await until(lambda: ready_of(api.get("nodes", "node-m1")) == "True", timeout=1.5)
    machine.power_off()
    took = await until(lambda: ready_of(api.get("nodes", "node-m1")) == "False", timeout=1.0)
    assert took < 0.5
    await until(lambda: ready_of(api.get("nodes", "node-m1")) == "Unknown", timeout=1.5)
    machine.power_on()  # and back
    await until(lambda: ready_of(api.get("nodes", "node-m1")) == "True", timeout=1.5)


async def test_reboot_keeps_cordon_annotations_and_foreign_taints(api, kubelet_for):
    machine = make_machine(clear=0.4)
    kubelet_for(machine)
    machine.power_on()
    await until(lambda: ready_of(api.get("nodes", "node-m1")) == "True" and
                taint_keys(api.get("nodes", "node-m1")) == [], timeout=2.0)
    await api.patch("nodes", "node-m1", {
        "metadata": {"annotations": {"infra.homecluster.dev/cordoned-by": "homecluster"}, "labels": {"team": "x"}},
        "spec": {"unschedulable": True, "taints": [CORDON_TAINT, CA_TAINT]}})
    machine.reset()
    await until(lambda: ready_of(api.get("nodes", "node-m1")) == "False", timeout=1.0)
    await until(lambda: CILIUM.key in taint_keys(api.get("nodes", "node-m1")), timeout=1.5)
    node = api.get("nodes", "node-m1")
    assert taint_keys(node) == [CORDON_TAINT["key"], CA_TAINT["key"], CILIUM.key]
    await until(lambda: CILIUM.key not in taint_keys(api.get("nodes", "node-m1")), timeout=1.5)
    node = api.get("nodes", "node-m1")
    assert node["spec"]["unschedulable"] is True
    assert node["metadata"]["annotations"]["infra.homecluster.dev/cordoned-by"] == "homecluster"
    assert node["metadata"]["labels"]["team"] == "x"
    assert taint_keys(node) == [CORDON_TAINT["key"], CA_TAINT["key"]]
    assert ready_of(node) == "True"


@pytest.mark.parametrize("fault", ["never_boots", "boots_but_never_registers"])
async def test_machines_that_never_register(api, kubelet_for, fault):
    machine = make_machine(boot=0.2, **{fault: True})
    kubelet_for(machine)
    machine.power_on()
    await asyncio.sleep(1.0)
    assert machine.power_state() == "on" and api.get("nodes", "node-m1") is None


async def test_taints_never_clear_and_flapping(api, kubelet_for):
    stuck = make_machine("stuck", boot=0.2, clear=0.2, taints_never_clear=True)
    flappy = make_machine("flappy", boot=0.2, flaps=True, flap_seconds=0.4)
    kubelet_for(stuck)
    kubelet_for(flappy)
    stuck.power_on()
    flappy.power_on()
    await until(lambda: ready_of(api.get("nodes", "node-flappy")) == "True", timeout=1.0)
    await until(lambda: ready_of(api.get("nodes", "node-flappy")) == "False", timeout=1.0)
    await until(lambda: ready_of(api.get("nodes", "node-flappy")) == "True", timeout=1.0)
    assert taint_keys(api.get("nodes", "node-stuck")) == [CILIUM.key]
    assert ready_of(api.get("nodes", "node-stuck")) == "True"


async def test_steady_state_traffic_is_modest(api, kubelet_for):
    machine = make_machine(boot=0.1, clear=0.1)
    kubelet = kubelet_for(machine, lease_seconds=0.5, status_seconds=1.0)
    machine.power_on()
    await until(lambda: api.get("nodes", "node-m1") is not None and taint_keys(api.get("nodes", "node-m1")) == [],
                timeout=1.5)
    await asyncio.sleep(0.3)
    before = kubelet.writes
    await asyncio.sleep(2.0)
    # 2 s at one lease renewal per 0.5 s and one status per 1 s: about 6 writes, never a busy loop
    assert 3 <= kubelet.writes - before <= 9


async def test_fleet_with_kubeconfig_boots_a_node_after_ipmitool_power_on(api):
    async with Fleet(kubeconfig=api.kubeconfig_path, lease_seconds=1, status_seconds=5) as fleet:
        ep = await fleet.add(MachineSpec("w1", "ipmi", boot_seconds=0.3, ready_taints_clear_seconds=0.2,
                                         provider_id="k3s://w1", readiness_taints=(CILIUM,)))
        result = await asyncio.to_thread(
            subprocess.run, ["ipmitool", "-I", "lanplus", "-H", "127.0.0.1", "-p", str(ep.ipmi["port"]), "-U",
                             ep.username, "-P", ep.password, "chassis", "power", "on"], capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        await until(lambda: ready_of(api.get("nodes", "w1")) == "True", timeout=1.3)
        assert api.get("nodes", "w1")["spec"]["providerID"] == "k3s://w1"
        fleet.machines["w1"].power_off()
        await until(lambda: ready_of(api.get("nodes", "w1")) == "False", timeout=1.0)
