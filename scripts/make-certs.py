#!/usr/bin/env python3
"""Make the operator's TLS Secrets yourself (the chart's certificates.mode=secrets).

Not needed for config/default-no-certmanager: there the operator makes and renews its own certificates
(`homecluster run --self-signed-certs`, docs/install.md). This script is for installs that bring their own.

Writes, into --out (default ./certs; it holds private keys, so keep it out of git):
  secrets.yaml   three kubernetes.io/tls Secrets, each with tls.crt, tls.key and ca.crt:
                   homecluster-webhook-cert     serving cert for the admission webhook
                   homecluster-provider-server  serving cert for the gRPC provider
                   homecluster-provider-client  the autoscaler's client cert (mTLS)
The webhook's caBundle is the Secrets' ca.crt: give it to the chart as webhook.caBundle (below).

The Secrets have the same names and keys cert-manager's would, so the Deployment and the autoscaler
example mount them unchanged. The CA's private key is not kept: to renew, run this again and
re-apply (every certificate, and the webhook's caBundle, change together).

Usage (from the repository root, in the project's virtualenv):
  .venv/bin/python scripts/make-certs.py [--namespace homecluster-system] [--days 365] [--out DIR]
  kubectl apply -f DIR/secrets.yaml
  helm install ... --set certificates.mode=secrets \
    --set webhook.caBundle=$(kubectl -n NS get secret homecluster-webhook-cert -o jsonpath='{.data.ca\\.crt}')
  (docs/install.md, "Helm without cert-manager")
"""
from __future__ import annotations

import argparse
import base64
import os
import sys
from pathlib import Path

import yaml

from homecluster.tls import KeyPair, issue, make_ca

DEFAULT_OUT = Path("certs")

WEBHOOK_SERVICE = "homecluster-webhook-service"
PROVIDER_SERVICE = "homecluster-provider"


def service_names(service: str, namespace: str) -> list[str]:
    """The names a client inside the cluster dials a Service by (the certificate's SANs)."""
    return [f"{service}.{namespace}.svc", f"{service}.{namespace}.svc.cluster.local"]


def tls_secret(name: str, namespace: str, pair: KeyPair, ca: KeyPair) -> dict:
    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode()
    return {
        "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
        "metadata": {"name": name, "namespace": namespace,
                     "labels": {"app.kubernetes.io/name": "homecluster",
                                "app.kubernetes.io/managed-by": "make-certs"}},
        "data": {"tls.crt": b64(pair.cert_pem), "tls.key": b64(pair.key_pem), "ca.crt": b64(ca.cert_pem)},
    }


def build(namespace: str, days: int) -> list[dict]:
    """The three Secrets. Pure apart from key generation."""
    ca = make_ca("homecluster-ca", days=days)
    webhook = issue(ca, WEBHOOK_SERVICE, service_names(WEBHOOK_SERVICE, namespace), server=True, days=days)
    provider = issue(ca, PROVIDER_SERVICE, service_names(PROVIDER_SERVICE, namespace), server=True, days=days)
    client = issue(ca, "cluster-autoscaler", [], server=False, client=True, days=days)
    secrets = [tls_secret("homecluster-webhook-cert", namespace, webhook, ca),
               tls_secret("homecluster-provider-server", namespace, provider, ca),
               tls_secret("homecluster-provider-client", namespace, client, ca)]
    return secrets


def write(out: Path, secrets: list[dict]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    old = os.umask(0o077)  # private keys: readable by their owner only
    try:
        (out / "secrets.yaml").write_text(yaml.safe_dump_all(secrets, sort_keys=False))
    finally:
        os.umask(old)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--namespace", default="homecluster-system",
                        help="the operator's namespace (the certificates name its Services)")
    parser.add_argument("--days", type=int, default=365, help="validity of every certificate")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help="directory to write secrets.yaml into (default ./certs)")
    args = parser.parse_args(argv)
    secrets = build(args.namespace, args.days)
    write(args.out, secrets)
    # Never print key material: only what was written.
    print(f"wrote {len(secrets)} Secrets for namespace {args.namespace!r} to {args.out / 'secrets.yaml'}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
