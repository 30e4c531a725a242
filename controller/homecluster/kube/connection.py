"""Where the API server is and how to authenticate: one loader for the operator's client and kopf.

kubernetes_asyncio's loaders read a kubeconfig (or the in-cluster service account); we keep only
what an HTTP client needs (address, TLS material, bearer token), so our own small client and kopf's
login handler connect with exactly the same credentials. The token never reaches a log line.

In a pod the token is a projected, bound service-account token that the kubelet rewrites before it
expires; like client-go, we re-read that file at most once a minute (`token_file`), so the operator
never depends on the API server's extended token lifetime to keep running.
"""
from __future__ import annotations

import os
import ssl
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

SERVICE_TOKEN_PATH = "/var/run/secrets/kubernetes.io/serviceaccount/token"
TOKEN_REREAD_SECONDS = 60.0


class TokenFile:
    """The latest token in a file, re-read when older than `every` seconds; the last good one on a read error."""

    def __init__(self, path: str, initial: str | None, every: float = TOKEN_REREAD_SECONDS,
                 clock=time.monotonic) -> None:
        self.path, self.every, self._clock = path, every, clock
        self._token, self._read_at = initial, clock() if initial else float("-inf")
        self._lock = threading.Lock()

    def current(self) -> str | None:
        with self._lock:
            now = self._clock()
            if now - self._read_at >= self.every:
                self._read_at = now
                try:
                    self._token = Path(self.path).read_text().strip() or self._token
                except OSError:
                    pass  # keep the last good token; the next read may succeed
            return self._token


@dataclass(frozen=True)
class Connection:
    """The API server's address and credentials, as plain values."""

    server: str
    ca_path: str | None = None
    cert_path: str | None = None
    key_path: str | None = None
    token: str | None = field(default=None, repr=False)
    insecure: bool = False
    token_file: TokenFile | None = field(default=None, repr=False, compare=False)  # in a pod: re-read

    def current_token(self) -> str | None:
        return self.token_file.current() if self.token_file is not None else self.token

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
        token = self.current_token()
        return {"Authorization": f"Bearer {token}"} if token else {}


async def load_connection(kubeconfig: str | None = None, context: str | None = None) -> Connection:
    """Load from `kubeconfig` (else $KUBECONFIG / ~/.kube/config), or in-cluster when none exists.

    Raises RuntimeError naming the paths tried when neither is available.
    """
    from kubernetes_asyncio import client, config

    cfg = client.Configuration()
    path = kubeconfig or os.environ.get("KUBECONFIG") or str(Path.home() / ".kube" / "config")
    in_cluster = False
    if kubeconfig or Path(path.split(os.pathsep)[0]).exists():
        await config.load_kube_config(config_file=path, context=context, client_configuration=cfg)
    elif os.environ.get("KUBERNETES_SERVICE_HOST"):
        config.load_incluster_config(client_configuration=cfg)
        in_cluster = True
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
        token_file=TokenFile(SERVICE_TOKEN_PATH, token) if in_cluster else None,
    )
