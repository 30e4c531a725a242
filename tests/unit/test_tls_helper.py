import ssl

from cryptography import x509

from homecluster.tls import issue, make_ca


def test_leaf_verifies_against_its_ca(tmp_path):
    ca = make_ca()
    leaf = issue(ca, "webhook", ["127.0.0.1", "homecluster-webhook.homecluster.svc"])
    cert = x509.load_pem_x509_certificate(leaf.cert_pem)
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "homecluster-webhook.homecluster.svc" in sans.get_values_for_type(x509.DNSName)
    cert_path, key_path = leaf.write(tmp_path, "tls")
    assert oct(key_path.stat().st_mode & 0o777) == "0o600"
    # the standard library accepts the pair and the CA as a trust root
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert_path, key_path)
    ca_path, _ = ca.write(tmp_path, "ca")
    client = ssl.create_default_context(cafile=str(ca_path))
    assert client.cert_store_stats()["x509_ca"] == 1


def test_other_ca_does_not_verify():
    ca, other = make_ca(), make_ca("other")
    leaf = issue(ca, "client", client=True, server=False)
    cert = x509.load_pem_x509_certificate(leaf.cert_pem)
    assert cert.issuer == x509.load_pem_x509_certificate(ca.cert_pem).subject
    assert cert.issuer != x509.load_pem_x509_certificate(other.cert_pem).subject
