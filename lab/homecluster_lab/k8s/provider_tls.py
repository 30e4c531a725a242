"""The provider over mTLS in the lab, wired as config/autoscaler ships it, and its certificates rotated.

`homecluster run` serves the provider with --provider-cert/--provider-key/--provider-client-ca (client
certificates required) instead of the lab's usual --provider-insecure. The autoscaler gets the cloud-config of
config/autoscaler: `cert`, `key`, `cacert` (the three files of the Secret homecluster-provider-client) and the
address by the Service's DNS name, `homecluster-provider.<namespace>.svc:<port>`, which is what the provider's
certificate names and what the autoscaler checks it against. That name resolves to the provider's loopback
port only inside the autoscaler's own mount namespace, whose /etc/hosts says so (`wrap`): the machine's
/etc/hosts is not touched.

One CA signs the provider's certificate and the autoscaler's, as the operator's self-signed mode and
scripts/make-certs.py do. `rotate_server` issues a new serving certificate and swaps the key, then the
certificate, each atomically (a new inode under the same name, as a Secret volume does); the provider
serves it to the next connection without a restart (controller/homecluster/provider/tlsfiles.py).
"""
from __future__ import annotations

import os
import shlex
import ssl
from dataclasses import dataclass
from pathlib import Path

from homecluster import tls

GRPC_TIMEOUT = "10s"


def _replace(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".new")
    tmp.write_bytes(data)
    tmp.replace(path)


@dataclass
class ProviderTLS:
    folder: Path
    namespace: str
    ca: tls.KeyPair

    @classmethod
    def create(cls, folder: Path, namespace: str) -> "ProviderTLS":
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "client").mkdir(exist_ok=True)
        made = cls(folder, namespace, tls.make_ca("homecluster-lab-provider-ca"))
        made.rotate_server()
        made.client_ca.write_bytes(made.ca.cert_pem)
        client = tls.issue(made.ca, "cluster-autoscaler", server=False, client=True)
        made.client_cert.write_bytes(client.cert_pem)
        made.client_key.write_bytes(client.key_pem)
        made.client_cacert.write_bytes(made.ca.cert_pem)
        for key in (made.server_key, made.client_key):
            key.chmod(0o600)
        return made

    # the provider's files (--provider-cert, --provider-key, --provider-client-ca)
    @property
    def server_cert(self) -> Path:
        return self.folder / "provider.crt"

    @property
    def server_key(self) -> Path:
        return self.folder / "provider.key"

    @property
    def client_ca(self) -> Path:
        return self.folder / "client-ca.crt"

    # the autoscaler's (the Secret homecluster-provider-client: tls.crt, tls.key, ca.crt)
    @property
    def client_cert(self) -> Path:
        return self.folder / "client" / "tls.crt"

    @property
    def client_key(self) -> Path:
        return self.folder / "client" / "tls.key"

    @property
    def client_cacert(self) -> Path:
        return self.folder / "client" / "ca.crt"

    @property
    def dns_name(self) -> str:
        """The name the autoscaler dials and checks the certificate against (docs/autoscaler.md)."""
        return f"homecluster-provider.{self.namespace}.svc"

    def operator_args(self) -> tuple[Path, Path, Path]:
        return self.server_cert, self.server_key, self.client_ca

    def rotate_server(self) -> bytes:
        """A new serving certificate (new key, new serial, same CA and names) in place; its PEM."""
        leaf = tls.issue(self.ca, "homecluster-provider", [self.dns_name])
        _replace(self.server_key, leaf.key_pem)  # key first: a half-swapped pair is not served (tlsfiles)
        _replace(self.server_cert, leaf.cert_pem)
        self.server_key.chmod(0o600)
        return leaf.cert_pem

    def cloud_config(self, port: int) -> str:
        """config/autoscaler's cloud-config with the lab's files and port."""
        return (f"address: {self.dns_name}:{port}\ncert: {self.client_cert}\nkey: {self.client_key}\n"
                f"cacert: {self.client_cacert}\ngrpc_timeout: {GRPC_TIMEOUT}\n")

    def hosts_file(self) -> Path:
        hosts = self.folder / "hosts"
        hosts.write_text(f"127.0.0.1 localhost {self.dns_name}\n::1 localhost\n")
        return hosts

    def wrap(self, argv: list[str]) -> list[str]:
        """`argv` in a private mount namespace whose /etc/hosts names the provider's Service (a user namespace
        too when not root)."""
        user = [] if os.geteuid() == 0 else ["--user", "--map-root-user"]
        script = 'mount --bind "$0" /etc/hosts && exec "$@"'
        return ["unshare", *user, "--mount", "--propagation", "private", "--", "sh", "-c", script,
                str(self.hosts_file()), *argv]

    def channel_credentials(self):
        import grpc
        return grpc.ssl_channel_credentials(root_certificates=self.ca.cert_pem,
                                            private_key=self.client_key.read_bytes(),
                                            certificate_chain=self.client_cert.read_bytes())

    def channel_options(self) -> list[tuple[str, str]]:
        return [("grpc.ssl_target_name_override", self.dns_name)]

    def served_certificate(self, host: str, port: int, timeout: float = 10.0) -> bytes:
        """The certificate (DER) the provider serves a new connection now, verified as the autoscaler does."""
        import socket
        context = ssl.create_default_context(cadata=self.ca.cert_pem.decode())
        context.load_cert_chain(self.client_cert, self.client_key)
        context.set_alpn_protocols(["h2"])
        with socket.create_connection((host, port), timeout=timeout) as raw:
            with context.wrap_socket(raw, server_hostname=self.dns_name) as conn:
                der = conn.getpeercert(binary_form=True)
        assert der, f"no certificate from {host}:{port}"
        return der

    def describe(self) -> str:
        return f"provider mTLS files in {shlex.quote(str(self.folder))}, name {self.dns_name}"
