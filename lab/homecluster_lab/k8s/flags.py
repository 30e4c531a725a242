"""How each program of the real control plane is started: pure argv building, no I/O.

Everything listens on 127.0.0.1 at ports picked free at start. etcd runs without fsync (a test's
data is thrown away); the API server authenticates client certificates from the lab's CA and
ServiceAccount tokens signed by the lab's key, authorizes with Node,RBAC, runs the admission plugins
of a normal cluster, and writes an audit log; the controller manager and the scheduler run without
leader election and authenticate by client certificate.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

SERVICE_CIDR = "10.0.0.0/24"
SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"

# The node lifecycle controller: a Node whose Lease is not renewed for NODE_MONITOR_GRACE is marked Unknown
# and tainted node.kubernetes.io/unreachable (the default grace is 50 s: a lab machine that was powered off
# would read as on that long). The lab's kubelets (the runner's, the machines') renew their Lease every
# NODE_LEASE_SECONDS, so a Node goes Unknown only after ten renewals are missed (a stall of the loaded
# machine), and post their status every NODE_STATUS_SECONDS (a real kubelet's nodeStatusUpdateFrequency),
# so a Node wrongly marked Unknown reads Ready again within that.
NODE_LEASE_SECONDS = 2.0
NODE_STATUS_SECONDS = 10.0
NODE_MONITOR_GRACE = "20s"
NODE_MONITOR_PERIOD = "1s"

# On top of the defaults, named so the list reads as what a normal cluster runs.
ADMISSION_PLUGINS = (
    "NamespaceLifecycle", "LimitRanger", "ServiceAccount", "NodeRestriction", "TaintNodesByCondition",
    "Priority", "DefaultTolerationSeconds", "DefaultStorageClass", "StorageObjectInUseProtection",
    "PersistentVolumeClaimResize", "RuntimeClass", "CertificateApproval", "CertificateSigning",
    "ClusterTrustBundleAttest", "CertificateSubjectRestriction", "DefaultIngressClass", "PodSecurity",
    "MutatingAdmissionWebhook", "ValidatingAdmissionPolicy",
    "ValidatingAdmissionWebhook", "ResourceQuota",
)

# Everything at Metadata (who, what, when, the response code) except the health probes; the
# RequestReceived stage is left out so each request is one line (ResponseComplete).
AUDIT_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: None
    nonResourceURLs: ["/healthz*", "/readyz*", "/livez*"]
  - level: Metadata
"""


@dataclass(frozen=True)
class Ports:
    etcd_client: int
    etcd_peer: int
    apiserver: int
    controller_manager: int
    scheduler: int


@dataclass(frozen=True)
class Files:
    """What the programs read and write, all under the control plane's folder."""

    etcd_data: Path
    ca_cert: Path
    ca_key: Path
    serving_cert: Path
    serving_key: Path
    service_account_key: Path
    service_account_pub: Path
    audit_policy: Path
    audit_log: Path
    controller_manager_kubeconfig: Path
    scheduler_kubeconfig: Path


def etcd_url(ports: Ports) -> str:
    return f"http://127.0.0.1:{ports.etcd_client}"


def apiserver_url(ports: Ports) -> str:
    return f"https://127.0.0.1:{ports.apiserver}"


def etcd(binary: Path, ports: Ports, files: Files) -> list[str]:
    peer = f"http://127.0.0.1:{ports.etcd_peer}"
    return [str(binary), "--name=default", f"--data-dir={files.etcd_data}",
            f"--listen-client-urls={etcd_url(ports)}", f"--advertise-client-urls={etcd_url(ports)}",
            f"--listen-peer-urls={peer}", f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=default={peer}", "--unsafe-no-fsync", "--log-level=warn"]


def apiserver(binary: Path, ports: Ports, files: Files) -> list[str]:
    return [str(binary), f"--etcd-servers={etcd_url(ports)}",
            "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", f"--secure-port={ports.apiserver}",
            f"--tls-cert-file={files.serving_cert}", f"--tls-private-key-file={files.serving_key}",
            f"--client-ca-file={files.ca_cert}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}",
            f"--service-account-key-file={files.service_account_pub}",
            f"--service-account-signing-key-file={files.service_account_key}",
            "--authorization-mode=Node,RBAC", "--anonymous-auth=false",
            f"--enable-admission-plugins={','.join(ADMISSION_PLUGINS)}",
            f"--audit-policy-file={files.audit_policy}", f"--audit-log-path={files.audit_log}",
            "--audit-log-format=json", "--audit-log-mode=blocking",
            "--allow-privileged=true",
            # nothing routes Service IPs here: the `kubernetes` Service keeps no loopback endpoints
            "--endpoint-reconciler-type=none",
            "--profiling=false"]


def controller_manager(binary: Path, ports: Ports, files: Files,
                       node_monitor_grace: str | None = NODE_MONITOR_GRACE) -> list[str]:
    """`node_monitor_grace` None: the binary's own default (a default cluster's 40-50 s), for the tests whose point
    is how the operator reads a Node that stays Ready after its machine went off."""
    kubeconfig = files.controller_manager_kubeconfig
    grace = [f"--node-monitor-grace-period={node_monitor_grace}"] if node_monitor_grace else []
    return [str(binary), f"--kubeconfig={kubeconfig}", f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}",
            "--bind-address=127.0.0.1", f"--secure-port={ports.controller_manager}",
            "--leader-elect=false", "--use-service-account-credentials=true",
            f"--service-account-private-key-file={files.service_account_key}",
            f"--root-ca-file={files.ca_cert}",
            f"--cluster-signing-cert-file={files.ca_cert}", f"--cluster-signing-key-file={files.ca_key}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            *grace, f"--node-monitor-period={NODE_MONITOR_PERIOD}",
            "--profiling=false"]


def scheduler(binary: Path, ports: Ports, files: Files) -> list[str]:
    kubeconfig = files.scheduler_kubeconfig
    return [str(binary), f"--kubeconfig={kubeconfig}", f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}",
            "--bind-address=127.0.0.1", f"--secure-port={ports.scheduler}",
            "--leader-elect=false", "--profiling=false"]
