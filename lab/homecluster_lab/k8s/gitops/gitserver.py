"""A Git repository of the pool, served read-only on loopback over Git's smart HTTP protocol.

    async with GitServer(folder) as git:     # folder/pool.git (bare) and folder/pool (a working clone)
        git.url                                # http://127.0.0.1:<port>/pool.git, for a Flux GitRepository
        git.commit({"pool/x.yaml": text}, "message", remove=["pool/y.yaml"])  # commit in the clone, push

`git http-backend` (Git's own CGI program) answers every request; this module only carries the CGI
exchange over a threaded HTTP server. Nothing can push over HTTP (receive-pack is off): changes land by
a commit in the working clone and a push to the bare repository through the file system, as a person
with the lab's folder would push.
"""
from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import threading
from collections.abc import Iterable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from homecluster_lab.config import LabError

HOST = "127.0.0.1"
BRANCH = "main"
AUTHOR = {"GIT_AUTHOR_NAME": "homecluster lab", "GIT_AUTHOR_EMAIL": "lab@homecluster.invalid",
          "GIT_COMMITTER_NAME": "homecluster lab", "GIT_COMMITTER_EMAIL": "lab@homecluster.invalid"}
MAX_BODY = 1 << 20  # a fetch's request (its "want"/"have" lines) is small; nothing bigger is read


def git(*args: str, cwd: Path) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=60,
                          env={**os.environ, **AUTHOR})
    if done.returncode != 0:
        raise LabError(f"git {' '.join(args)} in {cwd} failed: {done.stderr.strip()}")
    return done.stdout.strip()


class _Backend(BaseHTTPRequestHandler):
    root: Path  # set on the subclass a GitServer makes

    def do_GET(self) -> None:  # noqa: N802 - the http.server's name
        self._cgi(b"")

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            self.send_error(413, f"request body over {MAX_BODY} bytes")
            return
        self._cgi(self.rfile.read(length))

    def _cgi(self, body: bytes) -> None:
        path, _, query = self.path.partition("?")
        env = {"GIT_PROJECT_ROOT": str(self.root), "GIT_HTTP_EXPORT_ALL": "1", "PATH_INFO": path,
               "QUERY_STRING": query, "REQUEST_METHOD": self.command, "REMOTE_ADDR": self.client_address[0],
               "CONTENT_TYPE": self.headers.get("Content-Type") or "", "CONTENT_LENGTH": str(len(body)),
               "GIT_PROTOCOL": self.headers.get("Git-Protocol") or "", "PATH": os.environ.get("PATH", "")}
        done = subprocess.run(["git", "http-backend"], input=body, capture_output=True, env=env, timeout=120)
        head, _, payload = done.stdout.partition(b"\r\n\r\n")
        if not _ or done.returncode != 0:
            self.send_error(500, f"git http-backend failed: {done.stderr.decode(errors='replace')[:300]}")
            return
        status, headers = 200, []
        for line in head.decode("latin-1").split("\r\n"):
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.split()[0])
            elif name:
                headers.append((name, value.strip()))
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:  # quiet: Flux fetches every interval
        pass


class GitServer:
    def __init__(self, folder: Path, name: str = "pool") -> None:
        self.folder = Path(folder)
        self.bare = self.folder / f"{name}.git"
        self.clone = self.folder / name
        self.name = name
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self._server is not None, "not started"
        return f"http://{HOST}:{self._server.server_address[1]}/{self.name}.git"

    def start(self) -> None:
        if shutil.which("git") is None:
            raise LabError("git is missing: install Debian's git package (scripts/system-deps.sh)")
        self.folder.mkdir(parents=True, exist_ok=True)
        if not self.bare.exists():
            git("init", "--bare", "--initial-branch", BRANCH, str(self.bare), cwd=self.folder)
            git("clone", str(self.bare), str(self.clone), cwd=self.folder)
            git("checkout", "-B", BRANCH, cwd=self.clone)
        handler = type("Backend", (_Backend,), {"root": self.folder})
        self._server = ThreadingHTTPServer((HOST, 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="git-http", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    async def __aenter__(self) -> "GitServer":
        await asyncio.to_thread(self.start)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.to_thread(self.stop)

    def commit(self, files: Mapping[str, str], message: str, remove: Iterable[str] = ()) -> str:
        """Write `files` (paths relative to the clone), delete `remove`, commit, push; the new revision."""
        for rel, text in files.items():
            path = self.clone / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        for rel in remove:
            git("rm", "-q", rel, cwd=self.clone)
        git("add", "-A", cwd=self.clone)
        git("commit", "-q", "--allow-empty", "-m", message, cwd=self.clone)
        git("push", "-q", "origin", BRANCH, cwd=self.clone)
        return self.head()

    def revert_last(self, message: str | None = None) -> str:
        """`git revert HEAD`, pushed: the new revision."""
        git("revert", "--no-edit", "HEAD", cwd=self.clone)
        if message:
            git("commit", "-q", "--amend", "-m", message, cwd=self.clone)
        git("push", "-q", "origin", BRANCH, cwd=self.clone)
        return self.head()

    def head(self) -> str:
        return git("rev-parse", "HEAD", cwd=self.clone)
