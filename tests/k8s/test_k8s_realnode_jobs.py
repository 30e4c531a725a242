"""A lifecycle Job as a real container on the real node: a Wake-on-LAN slot's startup Job runs the runner image
(`make images`) with host networking, and its magic packet wakes the simulated machine.

The lab as `--control-plane kubernetes --real-node` runs it, with the operator as the lab's `homecluster run`;
one change: the Group's `spec.jobs.nodeSelector` names the real node instead of the lab's runner node
(RealLabCluster.jobs_on_real_node; the namespace is `privileged`, as docs/install.md says for Wake-on-LAN,
since the Job needs the host's network).
The Job pod is the operator's own manifest: user 1000, a read-only root filesystem, every capability dropped,
the slot's Secret as files; ansible-runner with the collection sends the packet to the machine's listener on
the host's loopback. (IPMI and Redfish Jobs, on the pod network: test_k8s_realnode_bmc_jobs.py.)
"""
from __future__ import annotations

from pathlib import Path

import pytest
from k8s_realnode import skip_unless_here
from k8s_install_proof import BOUND, boot_claim
from support.waits import until

from homecluster_lab.config import LabConfig
from homecluster_lab.k8s import nodeimages, realnode
from homecluster_lab.k8s.labcluster import RealLabCluster

pytestmark = [pytest.mark.asyncio(loop_scope="module"), skip_unless_here("runner")]
SLOT = "worker-01"
CLAIM = "wol-boot-1"


class JobsOnTheRealNode(RealLabCluster):
    node_images = (nodeimages.archive("runner"),)
    jobs_on_real_node = True


async def test_a_wake_on_lan_startup_job_runs_in_the_runner_image_on_the_real_node(tmp_path: Path):
    config = LabConfig(slots=1, driver="wol", boot_seconds=1, provider_address="127.0.0.1:0",
                       workdir=tmp_path / "lab", control_plane="kubernetes", real_node=True)
    async with JobsOnTheRealNode(config) as lab:
        assert lab.operator is not None, lab.operator_note
        await lab.api.create(boot_claim(CLAIM, SLOT))

        seen: dict[str, dict] = {}  # the Job pods on the real node, as last seen (the operator removes finished Jobs)

        async def settled() -> str | None:
            for pod in (await lab.api.kube.get(f"/api/v1/namespaces/{config.namespace}/pods"))["items"]:
                if pod["metadata"].get("labels", {}).get("job-name"):
                    seen[pod["metadata"]["name"]] = pod
            claim = next((c for c in lab.claims() if c["metadata"]["name"] == CLAIM), None)
            phase = ((claim or {}).get("status") or {}).get("phase")
            return phase if phase in ("ready", "failed") else None

        reached = await until(settled, "the claim to be ready or failed", BOUND, detail=lab.operator.log_tail)
        logs = sorted((lab.workdir / "realnode" / "varlog" / "pods").glob("*/*/*.log"))
        assert reached == "ready", (lab.claims(), [p["status"] for p in seen.values()],
                                    {str(p): p.read_text()[-2000:] for p in logs})
        assert lab.machine(SLOT).power_state() == "on"
        assert len(seen) == 1, list(seen)
        pod = next(iter(seen.values()))
        spec, status = pod["spec"], pod["status"]
        assert spec["nodeName"] == realnode.NODE and spec["hostNetwork"] is True
        assert spec["containers"][0]["image"] == nodeimages.reference("runner")
        assert spec["containers"][0]["securityContext"]["readOnlyRootFilesystem"] is True
        # last seen running, or finished with 0 (the operator removes a finished Job, and its pod with it)
        state = status["containerStatuses"][0]["state"]
        assert "running" in state or (state.get("terminated") or {}).get("exitCode") == 0, status
