"""What a TLS Secret holds, validated: everything read from the API is untrusted until parsed here.

`inspect_secret` turns a Secret's `data` (base64 strings, as the API returns them) into a `Held`
(the parsed certificate, its key's match, its CA copy) or a `Bad` that says what is wrong with it in
words an Event may carry -- never the key material itself. Pure: no I/O, no clock.
"""
from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.x509.oid import ExtendedKeyUsageOID

# A PEM certificate or key of ours is under 2 KiB; 16 KiB per entry bounds what we parse and hold.
MAX_ENTRY_BYTES = 16 * 1024
TLS_TYPE = "kubernetes.io/tls"
CERT, KEY, CA = "tls.crt", "tls.key", "ca.crt"


@dataclass(frozen=True)
class Held:
    """A Secret whose certificate and key parse and belong together."""

    cert: x509.Certificate
    cert_pem: bytes
    key_pem: bytes
    ca_pem: bytes | None  # ca.crt, when present (leaves carry their CA's certificate)

    @property
    def dns_names(self) -> tuple[str, ...]:
        try:
            ext = self.cert.extensions.get_extension_for_class(x509.SubjectAlternativeName)
        except x509.ExtensionNotFound:
            return ()
        return tuple(ext.value.get_values_for_type(x509.DNSName))

    @property
    def is_ca(self) -> bool:
        try:
            return bool(self.cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca)
        except x509.ExtensionNotFound:
            return False

    def has_usage(self, usage: x509.ObjectIdentifier) -> bool:
        try:
            return usage in self.cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
        except x509.ExtensionNotFound:
            return False


SERVER_AUTH = ExtendedKeyUsageOID.SERVER_AUTH
CLIENT_AUTH = ExtendedKeyUsageOID.CLIENT_AUTH


@dataclass(frozen=True)
class Bad:
    """A Secret that exists but cannot be used; `reason` names what is wrong (no secret material)."""

    reason: str


def _decode(data: Mapping[str, Any], key: str) -> bytes | Bad:
    raw = data.get(key)
    if not isinstance(raw, str) or not raw:
        return Bad(f"data[{key!r}] is missing or empty")
    if len(raw) > MAX_ENTRY_BYTES * 4 // 3 + 4:
        return Bad(f"data[{key!r}] is larger than {MAX_ENTRY_BYTES} bytes")
    try:
        return base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        return Bad(f"data[{key!r}] is not base64")


def _public(obj: Any) -> bytes:
    return obj.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def inspect_secret(secret: Mapping[str, Any] | None, *, want_ca: bool) -> Held | Bad | None:
    """None when there is no Secret; else what it holds. `want_ca`: a leaf must carry ca.crt."""
    if secret is None:
        return None
    if not isinstance(secret, Mapping):
        return Bad("is not an object")
    if secret.get("type", TLS_TYPE) != TLS_TYPE:
        return Bad(f"has type {str(secret.get('type'))[:64]!r}, not {TLS_TYPE}")
    data = secret.get("data") or {}
    if not isinstance(data, Mapping):
        return Bad("data is not a map")
    decoded: dict[str, bytes] = {}
    for key in (CERT, KEY) + ((CA,) if want_ca else ()):
        value = _decode(data, key)
        if isinstance(value, Bad):
            return value
        decoded[key] = value
    try:
        certs = x509.load_pem_x509_certificates(decoded[CERT])
    except ValueError:
        return Bad(f"data[{CERT!r}] is not a PEM certificate")
    if len(certs) != 1:
        return Bad(f"data[{CERT!r}] holds {len(certs)} certificates, not one")
    try:
        key = serialization.load_pem_private_key(decoded[KEY], password=None)
    except (ValueError, TypeError):
        return Bad(f"data[{KEY!r}] is not an unencrypted PEM private key")
    if _public(key.public_key()) != _public(certs[0].public_key()):
        return Bad(f"data[{KEY!r}] is not the key of data[{CERT!r}]")
    ca_pem = decoded.get(CA)
    if ca_pem is not None:
        try:
            if len(x509.load_pem_x509_certificates(ca_pem)) != 1:
                return Bad(f"data[{CA!r}] must hold exactly one certificate")
        except ValueError:
            return Bad(f"data[{CA!r}] is not a PEM certificate")
    return Held(cert=certs[0], cert_pem=decoded[CERT], key_pem=decoded[KEY], ca_pem=ca_pem)


def signed_by(leaf: x509.Certificate, ca: x509.Certificate) -> bool:
    """Whether `ca` issued `leaf` (issuer name and signature)."""
    try:
        leaf.verify_directly_issued_by(ca)
        return True
    except (ValueError, TypeError, Exception):  # noqa: BLE001 - InvalidSignature and kin: not issued by it
        return False
