"""IPMI and Redfish lifecycle Jobs as real containers on the real node, on the pod network.

The lab as `--control-plane kubernetes --real-node`, the operator as the lab's `homecluster run`, one change:
the Group's `spec.jobs.nodeSelector` names the real node. With a real node the lab binds the simulated BMCs and
boot ports on the host's address on the node's bridge (nodeconfig.GATEWAY), the Job pods' gateway, since a pod
on the pod network cannot reach the host's loopback. Two slots (`--driver mixed`): worker-01 powers on by IPMI,
worker-02 by Redfish. Each claim's startup Job runs the runner image (`make images`) as the operator's manifest
says: user 1000, a read-only root filesystem, every capability dropped, no host network, the slot's Secret as
files (the BMC refuses any other password, so a powered machine proves the files were read). Deleting the IPMI
claim: the shutdown Job's `cordon-drain` init container cordons and drains with its pod's projected token,
through the `kubernetes` Service, and its IPMI container powers the machine off. The audit log: the Job's
account made those reads, and none of our identities was refused.
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

pytestmark = [pytest.mark.asyncio(loop_scope="module"), skip_unless_here("runner")]
IPMI_SLOT, REDFISH_SLOT = "worker-01", "worker-02"
CLAIMS = {IPMI_SLOT: "ipmi-boot-1", REDFISH_SLOT: "redfish-boot-1"}
# container Jobs on 2 loaded cores: ansible-runner's start in a fresh container is slower than on the host
ROOM = {"job_poll_interval": "2s", "startup_job_timeout": "300s", "shutdown_job_timeout": "300s"}


class BmcJobsOnTheRealNode(RealLabCluster):
    node_images = (nodeimages.archive("runner"),)
    jobs_on_real_node = True


async def test_ipmi_and_redfish_jobs_run_as_containers_on_the_pod_network(tmp_path: Path):
    config = LabConfig(slots=2, driver="mixed", boot_seconds=1, provider_address="127.0.0.1:0",
                       workdir=tmp_path / "lab", control_plane="kubernetes", real_node=True, settings=dict(ROOM))
    async with BmcJobsOnTheRealNode(config) as lab:
        assert lab.operator is not None, lab.operator_note
        for slot in (IPMI_SLOT, REDFISH_SLOT):  # the BMCs where the pods' gateway is, not loopback
            assert lab.fleet.endpoints[slot].boot_check["host"] == nodeconfig.GATEWAY
        assert lab.fleet.endpoints[IPMI_SLOT].ipmi["address"] == nodeconfig.GATEWAY
        assert lab.fleet.endpoints[REDFISH_SLOT].redfish["endpoint"].startswith(f"http://{nodeconfig.GATEWAY}:")
        pods = JobPods(lab)
        for slot, claim in CLAIMS.items():
            await lab.api.create(boot_claim(claim, slot))

        async def both_settled() -> dict[str, str] | None:
            await pods.look()
            phases = {claim: claim_phase(lab, claim) for claim in CLAIMS.values()}
            return phases if all(p in ("ready", "failed") for p in phases.values()) else None

        phases = await until(both_settled, "both claims to be ready or failed", BOUND, detail=pods.evidence)
        assert phases == {claim: "ready" for claim in CLAIMS.values()}, (phases, pods.evidence())
        for slot, claim in CLAIMS.items():
            assert lab.machine(slot).power_state() == "on"
            startup_pod(pods, claim, f"{slot}-bmc")

        # the shutdown: its init container cordons and drains with the pod's own token, then IPMI powers off
        await lab.api.kube.delete(f"/apis/{names.API_GROUP}/v2alpha1/nodeclaims/{CLAIMS[IPMI_SLOT]}")

        async def off() -> bool:
            await pods.look()
            return claim_phase(lab, CLAIMS[IPMI_SLOT]) is None and lab.machine(IPMI_SLOT).power_state() == "off"

        await until(off, "the IPMI claim to be gone and its machine off", BOUND, detail=pods.evidence)
        assert len([p for p in pods.pods.values() if p["spec"].get("initContainers")]) == 1, pods.evidence()
        shutdown = shutdown_pod(pods, CLAIMS[IPMI_SLOT], f"{IPMI_SLOT}-bmc")
        assert lab.machine(REDFISH_SLOT).power_state() == "on"  # the other claim still holds its machine
        events = audit_events(lab)

    # the init container's reads, through the `kubernetes` Service and the node's relay to kube-apiserver, with
    # its own pod's token; the Job's account never refused
    assert_drain_token_read(events, [shutdown["metadata"]["name"]])
    assert_never_refused(events, JOB_ACCOUNT)
