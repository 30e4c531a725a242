"""How the lab's real node (realnode.py) is configured: pure text and argv building, no I/O.

Every path a program would otherwise take from the host (/var/lib/containerd, /run/containerd, /var/lib/kubelet,
/etc/cni/net.d, /var/lib/cni) is a folder of the node's own (NodePaths); what cannot be moved by a setting
(the kubelet's /var/log/pods and /var/log/containers) is bind-mounted over inside
the node's private mount namespace (MOUNT_OVERLAYS), so the host sees none of it.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

# The node's one cgroup (in every v1 hierarchy): the kubelet's --cgroup-root, and the sub-cgroup `node` that
# containerd, its shims, the kubelet and kube-proxy are moved to. Killing every process under it ends all
# the node started, also after the lab was SIGKILLed (realnode_sweep.py). One real node per machine.
CGROUP_ROOT = "homecluster-realnode"
NODE_CGROUP = f"{CGROUP_ROOT}/node"
BRIDGE = "hc-realnode0"
POD_CIDR = "10.244.77.0/24"
# the bridge's own address: the pods' gateway, the API server's relay (realnode.py) and the Node's InternalIP
# (the kubelet refuses a loopback node IP)
GATEWAY = "10.244.77.1"
APISERVER_RELAY_PORT = 6443
SANDBOX_IMAGE = "localhost/homecluster-pause:lab"

# The kubelet writes these kernel settings when they differ (vm.overcommit_memory=1, kernel.panic=10,
# kernel.panic_on_oops=1: a kubelet "owns" its machine). This machine is shared: inside the node's mount
# namespace the files read as the kubelet wants them (a file bind-mounted over each), so it writes none.
KUBELET_KERNEL_SETTINGS = {"vm/overcommit_memory": "1", "vm/panic_on_oom": "0", "kernel/panic": "10",
                           "kernel/panic_on_oops": "1", "kernel/keys/root_maxkeys": "1000000",
                           "kernel/keys/root_maxbytes": "25000000"}
# host folder -> the node's folder (relative to NodePaths.root) bind-mounted over it in the mount namespace
# (the pods' network namespaces are kept under containerd's state folder: netns_mounts_under_state_dir)
MOUNT_OVERLAYS = {"/var/log": "varlog"}


# What holds unix sockets (containerd's; the kubelet's root folder, with its pod-resources and plugin sockets) has a
# short fixed path: a socket's path takes at most 107 bytes, a test's folder can be longer. One node per machine.
RUN_DIR = Path("/run/homecluster-realnode")


@dataclass(frozen=True)
class NodePaths:
    root: Path  # the node's folder in the lab's
    run: Path  # RUN_DIR: removed with the node (nodesweep.sweep)

    @property
    def socket(self) -> Path:
        return self.run / "containerd.sock"

    @property
    def containerd_config(self) -> Path:
        return self.root / "containerd" / "config.toml"

    @property
    def cni_conf_dir(self) -> Path:
        return self.root / "cni" / "net.d"

    @property
    def kubelet_dir(self) -> Path:
        return self.root / "kubelet"

    @property
    def logs(self) -> Path:
        return self.root / "logs"


@dataclass(frozen=True)
class NodePorts:
    kubelet: int
    kubelet_healthz: int
    proxy_healthz: int
    proxy_metrics: int


def containerd_config(paths: NodePaths, cni_bin: str = "/usr/lib/cni", runc: str = "/usr/sbin/runc") -> str:
    """containerd 1.6 (config version 2): its root, state, socket and runc's state all under the node's folder;
    the CRI plugin with runc (cgroupfs, as the kubelet), the CNI config of cni_config() and the local pause image."""
    c = paths.root / "containerd"
    return f"""version = 2
root = "{c / 'root'}"
state = "{c / 'state'}"
oom_score = 0
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs", "io.containerd.tracing.processor.v1.otlp"]

[grpc]
  address = "{paths.socket}"

[ttrpc]
  address = "{paths.socket}.ttrpc"

[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = "{c / 'opt'}"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{SANDBOX_IMAGE}"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  disable_apparmor = true
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "{runc}"
        Root = "{c / 'runc'}"
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{cni_bin}"
    conf_dir = "{paths.cni_conf_dir}"
    max_conf_num = 1
"""


def cni_config(paths: NodePaths) -> str:
    """One bridge network: the bridge the node made (with GATEWAY on it), host-local addresses from POD_CIDR
    kept in the node's folder, a default route via the bridge (replies to the host's addresses stay local).
    isGateway is off: the plugin would switch on the host's IP forwarding, which nothing here needs."""
    return json.dumps({
        "cniVersion": "1.0.0", "name": "homecluster-realnode",
        "plugins": [
            {"type": "bridge", "bridge": BRIDGE, "isGateway": False, "ipMasq": False, "hairpinMode": True,
             "ipam": {"type": "host-local", "dataDir": str(paths.root / "cni" / "ipam"),
                      "ranges": [[{"subnet": POD_CIDR, "gateway": GATEWAY}]],
                      "routes": [{"dst": "0.0.0.0/0", "gw": GATEWAY}]}},
            {"type": "loopback"},
        ]}, indent=2)


def kubelet_config(paths: NodePaths, ports: NodePorts, ca_file: Path) -> str:
    """KubeletConfiguration for this kernel: cgroup v1 (failCgroupV1 off; 1.35 refuses v1 by default),
    cgroupfs (no systemd here), every pod under CGROUP_ROOT, no swap check, eviction off (a shared disk's
    use must not evict the lab's pods), ports picked free."""
    return json.dumps({
        "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
        "address": "127.0.0.1", "port": ports.kubelet, "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1", "healthzPort": ports.kubelet_healthz,
        "authentication": {"anonymous": {"enabled": False}, "webhook": {"enabled": False},
                           "x509": {"clientCAFile": str(ca_file)}},
        "authorization": {"mode": "AlwaysAllow"},
        "cgroupDriver": "cgroupfs", "cgroupRoot": "/" + CGROUP_ROOT, "failCgroupV1": False,
        "failSwapOn": False, "containerRuntimeEndpoint": f"unix://{paths.socket}",
        "resolvConf": "/etc/resolv.conf",
        "evictionHard": {"memory.available": "0%", "nodefs.available": "0%", "imagefs.available": "0%"},
        "imageGCHighThresholdPercent": 100, "imageGCLowThresholdPercent": 99,
        "nodeStatusUpdateFrequency": "10s", "nodeLeaseDurationSeconds": 40,
        "serializeImagePulls": False, "registerNode": True, "protectKernelDefaults": False,
        "localStorageCapacityIsolation": False, "enableDebuggingHandlers": False,
    }, indent=2)


def kube_proxy_config(kubeconfig: Path, node: str, ports: NodePorts) -> str:
    """KubeProxyConfiguration, iptables mode. It leaves the host's conntrack settings as they are (maxPerCore 0,
    no timeouts) and sets no route_localnet (localhost NodePorts off): its chains are all it changes."""
    return json.dumps({
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1", "kind": "KubeProxyConfiguration",
        "mode": "iptables", "hostnameOverride": node, "clusterCIDR": POD_CIDR,
        "clientConnection": {"kubeconfig": str(kubeconfig)},
        "bindAddress": GATEWAY,
        "healthzBindAddress": f"127.0.0.1:{ports.proxy_healthz}",
        "metricsBindAddress": f"127.0.0.1:{ports.proxy_metrics}",
        "iptables": {"localhostNodePorts": False, "syncPeriod": "30s", "minSyncPeriod": "0s"},
        "conntrack": {"maxPerCore": 0, "min": 0, "tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s"},
        "nodePortAddresses": ["127.0.0.1/32"],
    }, indent=2)


def kubelet_argv(binary: Path, paths: NodePaths, kubeconfig: Path, node: str) -> list[str]:
    return [str(binary), f"--config={paths.kubelet_dir / 'config.yaml'}", f"--kubeconfig={kubeconfig}",
            f"--root-dir={paths.run / 'kubelet'}", f"--cert-dir={paths.kubelet_dir / 'pki'}",
            f"--hostname-override={node}", f"--node-ip={GATEWAY}", "--v=1"]


def kube_proxy_argv(binary: Path, config: Path) -> list[str]:
    return [str(binary), f"--config={config}", "--v=1"]


def holder_script(paths: NodePaths) -> str:
    """The mount namespace's first process (under `unshare --mount --propagation private`): bind-mount the
    kernel settings' stand-ins and the overlays, say "ready", then wait to be killed."""
    lines = ["set -e"]
    for name in KUBELET_KERNEL_SETTINGS:
        lines.append(f"mount --bind {paths.root / 'sysctl' / name.replace('/', '.')} /proc/sys/{name}")
    for host, own in MOUNT_OVERLAYS.items():
        lines.append(f"mount --bind {paths.root / own} {host}")
    lines.append("echo ready")
    lines.append("exec sleep infinity")
    return "\n".join(lines)
