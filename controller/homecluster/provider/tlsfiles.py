"""The provider's mTLS files, re-read when they change: a renewed certificate is served without a restart.

cert-manager renews the provider's certificate (and may rotate the CA) by rewriting the mounted
Secret; a process that read the files once would serve the old certificate until it expired and the
autoscaler could no longer connect. So the server's credentials are dynamic
(grpc.dynamic_ssl_server_credentials): before every new connection's handshake gRPC asks
`CertificateReloader.fetch`, which stats the three files (cheap: no read while nothing changed) and
returns a new configuration when any of them changed.

A half-rotated set (a new certificate next to the old key, as a non-atomic copy leaves it for a
moment) is not served: the new files are read only when the key matches the certificate and every
file parses; otherwise the last good set stays in use, the problem is logged once, and the next
connection looks again. Connections already open keep the certificate they shook hands with.
"""
from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path

import grpc

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TLSFiles:
    """PEM files for mTLS: the server's certificate and key, and the CA that signs client certificates."""

    cert: Path
    key: Path
    client_ca: Path

    def roles(self) -> tuple[tuple[str, Path], ...]:
        return (("server certificate", Path(self.cert)), ("server key", Path(self.key)),
                ("client CA", Path(self.client_ca)))

    def check_present(self) -> None:
        for role, path in self.roles():
            if not path.is_file():
                raise FileNotFoundError(f"provider TLS {role} {str(path)!r} does not exist; "
                                        f"mount the Secret or pass --provider-insecure for plaintext")

    def read(self) -> tuple[bytes, bytes, bytes]:
        """(cert, key, client CA) PEM bytes; ValueError when they do not parse or the key is not the cert's."""
        cert, key, ca = (path.read_bytes() for _, path in self.roles())
        _check_pair(cert, key, ca, self)
        return cert, key, ca

    def credentials(self) -> grpc.ServerCredentials:
        """Server credentials that follow the files (see the module docstring)."""
        self.check_present()
        return CertificateReloader(self).credentials()


def _check_pair(cert: bytes, key: bytes, ca: bytes, files: TLSFiles) -> None:
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    try:
        leaf = x509.load_pem_x509_certificate(cert)
        private = serialization.load_pem_private_key(key, password=None)
        x509.load_pem_x509_certificates(ca)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"provider TLS files {files.cert}, {files.key}, {files.client_ca} do not parse: {exc}") \
            from None
    fmt = serialization.PublicFormat.SubjectPublicKeyInfo
    if leaf.public_key().public_bytes(serialization.Encoding.DER, fmt) != \
            private.public_key().public_bytes(serialization.Encoding.DER, fmt):
        raise ValueError(f"provider TLS key {files.key} is not the key of the certificate {files.cert} "
                         f"(a rotation half done?)")


def _signature(files: TLSFiles) -> tuple:
    """What changes when any file is rewritten or its Secret's symlink is swapped (stat follows links)."""
    out = []
    for _, path in files.roles():
        try:
            st = os.stat(path)
            out.append((st.st_ino, st.st_size, st.st_mtime_ns))
        except OSError:
            out.append(None)
    return tuple(out)


class CertificateReloader:
    """The fetcher of dynamic credentials: a new configuration when the files changed, else None."""

    def __init__(self, files: TLSFiles) -> None:
        self.files = files
        self._lock = threading.Lock()  # gRPC calls fetch from its own threads
        self._seen = _signature(files)
        self._initial = self._configuration(*files.read())
        self._complaint: str | None = None
        self.reloads = 0

    @staticmethod
    def _configuration(cert: bytes, key: bytes, ca: bytes) -> grpc.ServerCertificateConfiguration:
        return grpc.ssl_server_certificate_configuration([(key, cert)], root_certificates=ca)

    def credentials(self) -> grpc.ServerCredentials:
        return grpc.dynamic_ssl_server_credentials(self._initial, self.fetch, require_client_authentication=True)

    def fetch(self) -> grpc.ServerCertificateConfiguration | None:
        """Called before every handshake; never raises (a raise would fail the handshake)."""
        try:
            with self._lock:
                now = _signature(self.files)
                if now == self._seen:
                    return None
                try:
                    cert, key, ca = self.files.read()
                except (OSError, ValueError) as exc:
                    if str(exc) != self._complaint:
                        self._complaint = str(exc)
                        log.warning("provider TLS files changed but cannot be used yet; serving the previous "
                                    "certificate: %s", exc)
                    return None
                self._seen, self._complaint = now, None
                self.reloads += 1
                log.info("provider TLS files changed: serving the new certificate from %s", self.files.cert)
                return self._configuration(cert, key, ca)
        except Exception:  # noqa: BLE001 - a fetcher that raises breaks every handshake
            log.exception("provider TLS reload failed; serving the previous certificate")
            return None
