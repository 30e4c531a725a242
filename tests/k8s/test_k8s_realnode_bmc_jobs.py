"""IPMI, Redfish and Wake-on-LAN lifecycle Jobs as real containers on the real node.

The lab as `--control-plane kubernetes --real-node`, the operator as the lab's `homecluster run`, one change:
the Group's `spec.jobs.nodeSelector` names the real node. With a real node the lab binds the simulated BMCs and
boot ports and sshds on the host's address on the node's bridge (nodeconfig.GATEWAY), the Job pods' gateway, since
a pod on the pod network cannot reach the host's loopback. Three slots (`--driver mixed`): worker-01 powers on by
IPMI, worker-02 by Redfish, worker-03 by Wake-on-LAN (and off over SSH). Each claim's startup Job runs the runner
image (`make images`) as the operator's manifest says: user 1000, a read-only root filesystem, every capability
dropped, the slot's Secret as files (the BMC refuses any other password, so a powered machine proves the files
were read); the IPMI and Redfish ones on the pod network, the Wake-on-LAN one with the host's network
(`hostNetwork`, in the lab's namespace, which Pod Security lets do so: docs/install.md, "Wake-on-LAN"): its magic
packet goes to the lab's segment on the host's loopback, which no pod-network pod reaches, so a machine woken
proves the host network. Deleting the IPMI and the Wake-on-LAN claims: each shutdown Job's `cordon-drain` init
container cordons and drains with its pod's projected token, through the `kubernetes` Service; then its IPMI
container powers the one machine off, its SSH container (paramiko, the slot's key from the Secret) the other.
The audit log: the Job's account made those reads, and none of our identities was refused.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from k8s_install_proof import BOUND, boot_claim
from k8s_realnode import claim_phase, skip_unless_here
from k8s_realnode_jobs import (JOB_ACCOUNT, JobPods, assert_drain_token_read, assert_never_refused, audit_events,
                               shutdown_pod, startup_pod)
from support.waits import until

from homecluster import names
from homecluster_lab.config import LabConfig
from homecluster_lab.k8s import nodeconfig, nodeimages
from homecluster_lab.k8s.labcluster import RealLabCluster
from homecluster_lab.topology import secret_name

pytestmark = [pytest.mark.asyncio(loop_scope="module"), skip_unless_here("runner")]
IPMI_SLOT, REDFISH_SLOT, WOL_SLOT = "worker-01", "worker-02", "worker-03"
CLAIMS = {IPMI_SLOT: "ipmi-boot-1", REDFISH_SLOT: "redfish-boot-1", WOL_SLOT: "wol-boot-1"}
RELEASED = (IPMI_SLOT, WOL_SLOT)
# container Jobs on 2 loaded cores: ansible-runner's start in a fresh container is slower than on the host
ROOM = {"job_poll_interval": "2s", "startup_job_timeout": "300s", "shutdown_job_timeout": "300s"}


class BmcJobsOnTheRealNode(RealLabCluster):
    node_images = (nodeimages.archive("runner"),)
    jobs_on_real_node = True


async def test_ipmi_redfish_and_wake_on_lan_jobs_run_as_containers(tmp_path: Path):
    config = LabConfig(slots=3, driver="mixed", boot_seconds=1, provider_address="127.0.0.1:0",
                       workdir=tmp_path / "lab", control_plane="kubernetes", real_node=True, settings=dict(ROOM))
    async with BmcJobsOnTheRealNode(config) as lab:
        assert lab.operator is not None, lab.operator_note
        for slot in (IPMI_SLOT, REDFISH_SLOT):  # the BMCs where the pods' gateway is, not loopback
            assert lab.fleet.endpoints[slot].boot_check["host"] == nodeconfig.GATEWAY
        assert lab.fleet.endpoints[IPMI_SLOT].ipmi["address"] == nodeconfig.GATEWAY
        assert lab.fleet.endpoints[REDFISH_SLOT].redfish["endpoint"].startswith(f"http://{nodeconfig.GATEWAY}:")
        assert lab.fleet.endpoints[WOL_SLOT].ssh["host"] == nodeconfig.GATEWAY
        assert lab.fleet.endpoints[WOL_SLOT].wol["broadcastAddress"] == "127.0.0.1"  # the host's own loopback
        wol_mac = lab.machine(WOL_SLOT).mac
        pods = JobPods(lab)
        for slot, claim in CLAIMS.items():
            await lab.api.create(boot_claim(claim, slot))

        async def all_settled() -> dict[str, str] | None:
            await pods.look()
            phases = {claim: claim_phase(lab, claim) for claim in CLAIMS.values()}
            return phases if all(p in ("ready", "failed") for p in phases.values()) else None

        phases = await until(all_settled, "every claim to be ready or failed", BOUND, detail=pods.evidence)
        assert phases == {claim: "ready" for claim in CLAIMS.values()}, (phases, pods.evidence())
        for slot, claim in CLAIMS.items():
            assert lab.machine(slot).power_state() == "on"
            wol = slot == WOL_SLOT  # the host's network, and no Secret: a magic packet needs no credentials
            startup_pod(pods, claim, None if wol else secret_name(slot, "ipmi"), host_network=wol)
        assert (await lab.fleet.wol_segment()).received == [wol_mac]  # one magic packet, from the host network

        # the shutdowns: the init container cordons and drains with the pod's own token, then IPMI or SSH powers off
        for slot in RELEASED:
            await lab.api.kube.delete(f"/apis/{names.API_GROUP}/v2alpha1/nodeclaims/{CLAIMS[slot]}")

        async def off() -> bool:
            await pods.look()
            return all(claim_phase(lab, CLAIMS[s]) is None and lab.machine(s).power_state() == "off"
                       for s in RELEASED)

        await until(off, "the IPMI and Wake-on-LAN claims to be gone and their machines off", BOUND,
                    detail=pods.evidence)
        assert len([p for p in pods.pods.values() if p["spec"].get("initContainers")]) == 2, pods.evidence()
        shutdowns = [shutdown_pod(pods, CLAIMS[s], secret_name(s, lab.fleet.endpoints[s].method)) for s in RELEASED]
        assert lab.fleet.ssh_commands(WOL_SLOT) == ["poweroff"]  # the graceful off, from the pod network
        assert lab.machine(REDFISH_SLOT).power_state() == "on"  # the other claim still holds its machine
        events = audit_events(lab)

    # the init containers' reads, through the `kubernetes` Service and the node's relay to kube-apiserver, each
    # with its own pod's token; the Job's account never refused
    assert_drain_token_read(events, [pod["metadata"]["name"] for pod in shutdowns])
    assert_never_refused(events, JOB_ACCOUNT)
