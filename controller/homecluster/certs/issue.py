"""Make the CA and the leaves of plan.py (new ECDSA P-256 keys), at a given time, and their Secrets' data.

Not pure in one respect only: keys are random. The validity window is the caller's `now` and
lifetime, so a test with a fake clock gets certificates that expire when it says.
"""
from __future__ import annotations

import base64
import datetime as dt

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from homecluster.certs.inspect import CA, CERT, KEY
from homecluster.certs.plan import CA_COMMON_NAME, Leaf
from homecluster.tls import KeyPair

BACKDATE = dt.timedelta(minutes=5)  # clocks of the API server and the operator may differ a little


def _backdate(lifetime: dt.timedelta) -> dt.timedelta:
    """At most a tenth of the lifetime: a short-lived certificate must not be due for renewal when made."""
    return min(BACKDATE, lifetime / 10)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def make_ca(now: dt.datetime, lifetime: dt.timedelta) -> KeyPair:
    key = ec.generate_private_key(ec.SECP256R1())
    name = _name(CA_COMMON_NAME)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - _backdate(lifetime)).not_valid_after(now + lifetime)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False, encipher_only=False,
                                         decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256()))
    return KeyPair(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))


def issue_leaf(ca: KeyPair, leaf: Leaf, now: dt.datetime, lifetime: dt.timedelta) -> KeyPair:
    """A leaf signed by `ca`; it never outlives the CA."""
    ca_cert = x509.load_pem_x509_certificate(ca.cert_pem)
    ca_key = serialization.load_pem_private_key(ca.key_pem, password=None)
    key = ec.generate_private_key(ec.SECP256R1())
    not_after = min(now + lifetime, ca_cert.not_valid_after_utc)
    builder = (x509.CertificateBuilder().subject_name(_name(leaf.common_name)).issuer_name(ca_cert.subject)
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - _backdate(lifetime)).not_valid_after(not_after)
               .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
               .add_extension(x509.KeyUsage(digital_signature=True, key_encipherment=False, key_cert_sign=False,
                                            crl_sign=False, content_commitment=False, data_encipherment=False,
                                            key_agreement=False, encipher_only=False, decipher_only=False),
                              critical=True)
               .add_extension(x509.ExtendedKeyUsage([leaf.usage]), critical=False)
               .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_cert.public_key()),
                              critical=False))
    if leaf.dns_names:
        builder = builder.add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in leaf.dns_names]),
                                        critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())
    return KeyPair(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))


def secret_data(pair: KeyPair, ca: KeyPair) -> dict[str, str]:
    """A kubernetes.io/tls Secret's data: tls.crt, tls.key and ca.crt (base64), as cert-manager writes it."""
    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode()
    return {CERT: b64(pair.cert_pem), KEY: b64(pair.key_pem), CA: b64(ca.cert_pem)}
