"""The real control plane's certificates, ServiceAccount key and kubeconfigs, made fresh at every start.

One CA signs everything: the API server's serving certificate (loopback names plus the in-cluster
names of the `kubernetes` Service), and one client certificate per identity the API server
authenticates by certificate — the admin (group system:masters), kube-controller-manager and
kube-scheduler (the users their bootstrap RBAC roles are bound to). The ServiceAccount tokens are
signed with an EC P-256 key (ES256) made here too. Private keys are written with mode 0600.
"""
from __future__ import annotations

import base64
from dataclasses import dataclass
from pathlib import Path

import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from homecluster.tls import KeyPair, issue, make_ca

SERVICE_IP = "10.0.0.1"  # the first address of flags.SERVICE_CIDR: the `kubernetes` Service
SERVING_HOSTS = ["127.0.0.1", "localhost", SERVICE_IP, "kubernetes", "kubernetes.default",
                 "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"]

# identity -> (user name, groups) as the API server reads them from a client certificate
ADMIN = ("homecluster-lab-admin", ("system:masters",))
CONTROLLER_MANAGER = ("system:kube-controller-manager", ())
SCHEDULER = ("system:kube-scheduler", ())


@dataclass(frozen=True)
class Pki:
    """Paths of everything made; `ca` is kept to issue more client certificates (a test's user)."""

    directory: Path
    ca: KeyPair
    ca_cert: Path
    ca_key: Path
    serving_cert: Path
    serving_key: Path
    service_account_key: Path
    service_account_pub: Path  # the API server verifies tokens with the public half (PEM, SubjectPublicKeyInfo)

    def client(self, user: str, groups: tuple[str, ...] = ()) -> tuple[Path, Path]:
        """A client certificate for `user` in `groups`: (cert, key) paths."""
        pair = issue(self.ca, user, server=False, client=True, organizations=groups)
        return pair.write(self.directory, "client-" + user.replace(":", "-"))


def make(directory: Path) -> Pki:
    ca = make_ca("homecluster-lab-kubernetes-ca")
    ca_cert, ca_key = ca.write(directory, "ca")
    serving_cert, serving_key = issue(ca, "kube-apiserver", SERVING_HOSTS).write(directory, "apiserver")
    signing = ec.generate_private_key(ec.SECP256R1())
    sa_key, sa_pub = directory / "service-account.key", directory / "service-account.pub"
    sa_key.touch(mode=0o600)
    sa_key.write_bytes(signing.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    sa_pub.write_bytes(signing.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    return Pki(directory, ca, ca_cert, ca_key, serving_cert, serving_key, sa_key, sa_pub)


def render_kubeconfig(url: str, ca_pem: bytes, user: dict[str, str], name: str = "homecluster-k8s") -> str:
    """A kubeconfig for `user`: {"client-certificate": path, "client-key": path} or {"token": ...}."""
    doc = {
        "apiVersion": "v1", "kind": "Config", "preferences": {},
        "clusters": [{"name": name, "cluster": {
            "server": url, "certificate-authority-data": base64.b64encode(ca_pem).decode()}}],
        "users": [{"name": name, "user": dict(user)}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name, "namespace": "default"}}],
        "current-context": name,
    }
    return yaml.safe_dump(doc, sort_keys=False)


def write_kubeconfig(path: Path, pki: Pki, url: str, identity: tuple[str, tuple[str, ...]]) -> Path:
    """A kubeconfig authenticating as `identity` (user, groups) with a client certificate made for it."""
    cert, key = pki.client(*identity)
    return write_user_kubeconfig(path, pki, url, {"client-certificate": str(cert), "client-key": str(key)})


def write_user_kubeconfig(path: Path, pki: Pki, url: str, user: dict[str, str]) -> Path:
    """A kubeconfig (mode 0600) for `user` as render_kubeconfig takes it, e.g. a ServiceAccount's token."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch(mode=0o600)
    path.write_text(render_kubeconfig(url, pki.ca.cert_pem, user))
    return path
