"""Where the API server is and how to authenticate: one loader for the operator's client and kopf.

kubernetes_asyncio's loaders read a kubeconfig (or the in-cluster service account); we keep only
what an HTTP client needs (address, TLS material, bearer token), so our own small client and kopf's
login handler connect with exactly the same credentials. The token never reaches a log line.
"""
from __future__ import annotations

import os
import ssl
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Connection:
    """The API server's address and credentials, as plain values."""

    server: str
    ca_path: str | None = None
    cert_path: str | None = None
    key_path: str | None = None
    token: str | None = field(default=None, repr=False)
    insecure: bool = False

    def ssl_context(self) -> ssl.SSLContext | bool:
        """The TLS context for aiohttp (True: system defaults; plain http needs none)."""
        if not self.server.startswith("https"):
            return True
        ctx = ssl.create_default_context(cafile=self.ca_path) if self.ca_path else ssl.create_default_context()
        if self.insecure:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        if self.cert_path and self.key_path:
            ctx.load_cert_chain(self.cert_path, self.key_path)
        return ctx

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}


async def load_connection(kubeconfig: str | None = None, context: str | None = None) -> Connection:
    """Load from `kubeconfig` (else $KUBECONFIG / ~/.kube/config), or in-cluster when none exists.

    Raises RuntimeError naming the paths tried when neither is available.
    """
    from kubernetes_asyncio import client, config

    cfg = client.Configuration()
    path = kubeconfig or os.environ.get("KUBECONFIG") or str(Path.home() / ".kube" / "config")
    if kubeconfig or Path(path.split(os.pathsep)[0]).exists():
        await config.load_kube_config(config_file=path, context=context, client_configuration=cfg)
    elif os.environ.get("KUBERNETES_SERVICE_HOST"):
        config.load_incluster_config(client_configuration=cfg)
    else:
        raise RuntimeError(
            f"no Kubernetes credentials: {path} does not exist and this is not a pod "
            f"(KUBERNETES_SERVICE_HOST unset); pass --kubeconfig or set KUBECONFIG")
    token = None
    auth = (cfg.api_key or {}).get("authorization") or (cfg.api_key or {}).get("BearerToken")
    if auth:
        token = auth.split(" ", 1)[1] if auth.lower().startswith("bearer ") else auth
    return Connection(
        server=cfg.host.rstrip("/"),
        ca_path=cfg.ssl_ca_cert or None,
        cert_path=cfg.cert_file or None,
        key_path=cfg.key_file or None,
        token=token,
        insecure=not cfg.verify_ssl,
    )
