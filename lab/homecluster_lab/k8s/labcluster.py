"""The lab on the real control plane (`homecluster lab --control-plane kubernetes`).

Everything LabCluster starts, with the in-memory API server replaced by the real one and the lab's
stand-ins for kube-controller-manager retired:
- etcd, kube-apiserver, kube-controller-manager and kube-scheduler (RealControlPlane), children of the lab,
  so its reaper covers them;
- our install as a user applies it (install.py): the CRDs, the operator's namespace (Pod Security
  `restricted`, or `privileged` when a slot powers on by Wake-on-LAN) and config/rbac;
- the operator, `homecluster run`, with a TokenRequest token of its `homecluster-controller` ServiceAccount,
  so every request it makes passes the real RBAC authorizer; its webhook registered by URL on loopback;
- the runner node (executor/runnernode.py), our kubelet authenticated as `system:node:<RUNNER>`: the real Job
  controller makes each lifecycle Job's pod, the real scheduler binds it to the runner (the lab's Group
  asks for it with `spec.jobs.nodeSelector`), and the runner runs it with ansible-runner;
- the simulated machines, whose kubelets register their Nodes, post Ready, renew Leases (every
  flags.NODE_LEASE_SECONDS), mark the pods bound to their Node Running and finish their graceful deletions,
  each as its node (`system:node:<slot>`), and fall silent when powered off: the real node lifecycle
  controller marks the Node Unknown and taints it unreachable. The pool's readiness taint is removed by the
  lab's "CNI" identity (install.CNI_USER), since NodeRestriction forbids a kubelet to touch its Node's taints.
"""
from __future__ import annotations

from pathlib import Path

from homecluster import names
from homecluster_lab import topology
from homecluster_lab.cluster import LabCluster, _refuse_foreign_kubeconfig, _unlink

from . import flags, install, nodeconfig, pki
from .controlplane import RealControlPlane
from .realapi import RealApi

RUNNER = "lab-runner"


class RealLabCluster(LabCluster):
    """LabCluster on kube-apiserver & co. Same attributes; `control_plane` is the RealControlPlane."""

    api: RealApi  # a LabApi (labapi.py) with the admin's client (`api.kube`) beside it
    control_plane: RealControlPlane | None = None
    audit_policy: str | None = None  # kube-apiserver's audit policy; None: the lab's (flags.AUDIT_POLICY)
    # kube-controller-manager's --node-monitor-grace-period: the lab's short one, or None for the binary's default
    node_monitor_grace: str | None = flags.NODE_MONITOR_GRACE
    _operator_kubeconfig_path: Path | None = None
    real_node = None  # the RealNode (--real-node), homecluster_lab.k8s.realnode
    node_images: tuple[Path, ...] = ()  # OCI archives the real node imports before its kubelet starts
    jobs_on_real_node = False  # the Group's Jobs on the real node (needs --real-node and the runner image there)

    async def _start_api(self) -> None:
        policy = {"audit_policy": self.audit_policy} if self.audit_policy else {}
        self.control_plane = RealControlPlane(self.workdir / "k8s", node_monitor_grace=self.node_monitor_grace,
                                              **policy)
        await self._timed("control plane", self._stack.enter_async_context(self.control_plane))
        cp = self.control_plane
        assert cp.pki is not None
        self.api = RealApi(cp.url, cp.kubeconfig_path, cp.pki.ca.cert_pem)
        await self._stack.enter_async_context(self.api)
        await self._timed("install", self._install())
        for obj in install.cni_rbac():
            await self.api.create_or_keep(obj)
        await self.api.start_cache()
        if self.config.real_node:
            await self._timed("real node", self._start_real_node())
        if self.config.operator:
            self._operator_kubeconfig_path = await install.service_account_kubeconfig(
                self.api, self.workdir / "operator.kubeconfig", cp.pki, self.config.namespace)
        self.kubeconfig_path = cp.kubeconfig_path
        wanted = self.config.kubeconfig
        if wanted is not None:
            from homecluster_lab.apiserver.kubeconfig import CONTEXT
            wanted = Path(wanted).expanduser().resolve()
            _refuse_foreign_kubeconfig(wanted)
            cert, key = cp.pki.client(*pki.ADMIN)
            wanted.parent.mkdir(parents=True, exist_ok=True)
            wanted.touch(mode=0o600)
            wanted.write_text(pki.render_kubeconfig(cp.url, cp.pki.ca.cert_pem, {
                "client-certificate": str(cert), "client-key": str(key)}, name=CONTEXT))
            self._stack.callback(_unlink, wanted)
            self.kubeconfig_path = wanted

    async def _start_real_node(self) -> None:
        from .realnode import RealNode
        cp = self.control_plane
        assert cp is not None and cp.pki is not None
        self.real_node = RealNode(self.workdir / "realnode", url=cp.url, pki=cp.pki, kube=self.api.kube,
                                  images=self.node_images)
        await self._stack.enter_async_context(self.real_node)
        # the BMCs and boot ports on the host's address on the node's bridge: the Job pods' gateway (the machines
        # start after the node); Wake-on-LAN's host-network pods reach the loopback segment as before
        self.bmc_host = nodeconfig.GATEWAY

    async def _install(self) -> None:
        """Our install from config/ (a test installs with helm instead)."""
        wol = any(topology.method_for(i, self.config.driver) == "wol" for i in range(self.config.slots))
        await install.install(self.api, self.config.namespace, host_network=wol)

    def _kubelet_credentials(self) -> dict[str, object]:
        """Each machine's kubelet as its node (`system:node:<slot>`); the readiness taints through the lab's
        "CNI" identity (install.CNI_USER), as on a cluster where the CNI agent owns them."""
        cp = self.control_plane
        assert cp is not None and cp.pki is not None
        folder = self.workdir / "kubelets"
        cni = pki.write_kubeconfig(folder / "cni.kubeconfig", cp.pki, cp.url, (install.CNI_USER, ()))
        return {"kubeconfig": cni, "lease_seconds": flags.NODE_LEASE_SECONDS,
                "status_seconds": flags.NODE_STATUS_SECONDS,
                "node_kubeconfig": lambda node: install.node_kubeconfig(folder / f"{node}.kubeconfig", cp.pki,
                                                                        cp.url, node)}

    async def _create_pool(self) -> None:
        await super()._create_pool()
        # lifecycle Jobs run on the runner node, never on a pool machine (whose kubelet runs nothing); with
        # jobs_on_real_node on the real node, as containers of the runner image
        if self.jobs_on_real_node:
            from .realnode import NODE
            selector = {"kubernetes.io/hostname": NODE}
        else:
            selector = {_runner_label(): "true"}
        await self.api.kube.merge_patch(f"/apis/{names.API_GROUP}/v2alpha1/groups/{self.config.group}",
                                        {"spec": {"jobs": {"nodeSelector": selector}}})

    async def _start_executor(self) -> None:
        from homecluster_lab.executor import ExecutorConfig
        from homecluster_lab.executor.runnernode import RunnerNode

        cp = self.control_plane
        assert cp is not None and cp.pki is not None
        kubeconfig = install.node_kubeconfig(self.workdir / "runner.kubeconfig", cp.pki, cp.url, RUNNER)
        cfg = ExecutorConfig(kubeconfig_path=kubeconfig, workdir=self.workdir / "pods", node_name=RUNNER,
                             collections_path=self._collections_path())
        self.executor = RunnerNode(cfg, lease_seconds=flags.NODE_LEASE_SECONDS,
                                   status_seconds=flags.NODE_STATUS_SECONDS)
        await self._stack.enter_async_context(self.executor)

    def _operator_kubeconfig(self) -> Path:
        assert self._operator_kubeconfig_path is not None
        return self._operator_kubeconfig_path

    def describe_parts(self) -> list[str]:
        parts = super().describe_parts()
        cp = self.control_plane
        assert cp is not None
        replaced = []
        for line in parts:
            if line.startswith("api server"):
                line = (f"api server   {cp.url}  kube-apiserver + etcd + kube-controller-manager + kube-scheduler"
                        f" (kubectl --kubeconfig {self.kubeconfig_path} get homecluster); logs in {cp.workdir / 'logs'}")
            elif line.startswith("executor"):
                line = (f"runner node  {RUNNER}: our kubelet (system:node:{RUNNER}) runs the Job pods the scheduler "
                        f"binds to it; pods under {self.workdir / 'pods'}")
            elif line.startswith("operator") and self.operator is not None:
                line += f", as ServiceAccount {self.config.namespace}/{install.OPERATOR_ACCOUNT}"
            replaced.append(line)
        if self.real_node is not None:
            node = self.real_node
            replaced.append(f"real node    {node.name}: containerd + kubelet + kube-proxy (ctr --address "
                            f"{node.paths.socket} -n k8s.io ...); logs in {node.paths.logs}")
        return replaced


def _runner_label() -> str:
    from homecluster_lab.executor.runnernode import RUNNER_LABEL
    return RUNNER_LABEL
