"""Where the API server is and how to authenticate, as plain values (read by kube/kubeconfig.py).

Only what an HTTP client needs (address, TLS material, bearer token), so our own small client, the CLI
verbs and kopf's login handler connect with exactly the same credentials. Secrets never reach a log line.

In a pod the token is a projected, bound service-account token that the kubelet rewrites before it
expires; like client-go, we re-read that file at most once a minute (`token_file`), so the operator
never depends on the API server's extended token lifetime to keep running.
"""
from __future__ import annotations

import ssl
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

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
    # inline PEM text (a kubeconfig's *-data fields), used when the matching path is not set
    ca_data: str | None = field(default=None, repr=False)
    cert_data: str | None = field(default=None, repr=False)
    key_data: str | None = field(default=None, repr=False)
    token: str | None = field(default=None, repr=False)
    insecure: bool = False
    # in a pod: the re-read token file; for the CLI also a credential plugin (kube/execcred.py): anything
    # whose current() gives the token of the next request
    token_file: TokenFile | None = field(default=None, repr=False, compare=False)

    def current_token(self) -> str | None:
        return self.token_file.current() if self.token_file is not None else self.token

    def ssl_context(self) -> ssl.SSLContext | bool:
        """The TLS context for aiohttp (True: system defaults; plain http needs none)."""
        if not self.server.startswith("https"):
            return True
        ctx = ssl.create_default_context(cafile=self.ca_path, cadata=None if self.ca_path else self.ca_data)
        if self.insecure:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        if (self.cert_path or self.cert_data) and (self.key_path or self.key_data):
            self._load_client_cert(ctx)
        return ctx

    def _load_client_cert(self, ctx: ssl.SSLContext) -> None:
        """ssl reads a certificate chain only from files: inline data lives in a private folder for the call."""
        with tempfile.TemporaryDirectory(prefix="homecluster-tls-") as folder:
            cert, key = self.cert_path, self.key_path
            if not cert:
                cert = f"{folder}/client.crt"
                Path(cert).write_text(self.cert_data or "")
            if not key:
                key = f"{folder}/client.key"
                Path(key).write_text(self.key_data or "")
            ctx.load_cert_chain(cert, key)

    def headers(self) -> dict[str, str]:
        token = self.current_token()
        return {"Authorization": f"Bearer {token}"} if token else {}
