"""sushy-tools' Redfish emulator (fake driver) as a loopback peer, in its own process.

Run as ``python -m ansible_peers.sushy --state-dir D --delay S [--htpasswd F]``: it binds
127.0.0.1 port 0, prints the port on its first line of stdout and serves until killed.
The fake driver applies each power change after a random 1-11 s; this launcher replaces
that draw with ``--delay`` seconds (the machine's own delay), so tests are quick and
deterministic. It also appends each PATCH body to ``<state-dir>/patches.jsonl`` (the emulator keeps the
boot target but not BootSourceOverrideEnabled, which a test of a one-time boot device must see).
With ``--sessions`` it also offers a SessionService (``redfish_sessions``; sushy-tools has none) and records its
logins and logouts in ``<state-dir>/sessions.jsonl``.
Everything else is the emulator's own code.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path


class _FixedDelay:
    """Stands in for the ``random`` module inside the fake driver."""

    def __init__(self, seconds: int) -> None:
        self.seconds = seconds

    def randint(self, _low: int, _high: int) -> int:
        return self.seconds


class _RecordPatches:
    """WSGI middleware: appends each PATCH body (JSON) to a file, one line each, then passes the request on."""

    def __init__(self, app, path: Path) -> None:
        self.app, self.path = app, path

    def __call__(self, environ, start_response):
        if environ.get("REQUEST_METHOD") == "PATCH":
            import io
            body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "ab") as out:
                out.write(body.replace(b"\n", b" ") + b"\n")
            environ["wsgi.input"] = io.BytesIO(body)
        return self.app(environ, start_response)


def serve(state_dir: str, delay: int, htpasswd, power_state: str, tls=None, sessions: bool = False,
          stall_reads: float = 0) -> None:
    from werkzeug.serving import make_server
    from sushy_tools.emulator import main as emulator
    from sushy_tools.emulator.resources.systems import fakedriver

    fakedriver.random = _FixedDelay(delay)
    config = {
        "SUSHY_EMULATOR_FAKE_DRIVER": True,
        "SUSHY_EMULATOR_STATE_DIR": state_dir,
        "SUSHY_EMULATOR_FAKE_SYSTEMS": [{
            "uuid": "27946b59-9e44-4fa7-8e91-f3527a1ef094", "name": "worker-01", "power_state": power_state,
            "external_notifier": False, "nics": [{"mac": "52:54:00:12:34:56", "ip": "127.0.0.1"}],
        }],
    }
    if htpasswd:
        config["SUSHY_EMULATOR_AUTH_FILE"] = htpasswd
    emulator.app.configure(extra_config=config)
    app = _RecordPatches(emulator.app, Path(state_dir) / "patches.jsonl")
    if sessions:
        from ansible_peers.redfish_sessions import SessionService
        app = SessionService(app, htpasswd, Path(state_dir) / "sessions.jsonl", stall_reads=stall_reads)
    server = make_server("127.0.0.1", 0, app, threaded=True, ssl_context=tuple(tls) if tls else None)
    print(server.server_port, flush=True)
    server.serve_forever()


class SushyEmulator:
    """Starts the launcher above in a subprocess; one state directory per instance."""

    system_id = "27946b59-9e44-4fa7-8e91-f3527a1ef094"

    def __init__(self, workdir: Path, username: str = "admin", password: str = "s3cret-redfish",
                 delay: int = 0, power_state: str = "Off", tls: bool = False, sessions: bool = False,
                 stall_reads: float = 0) -> None:
        self.dir = Path(workdir)
        # tls: serve HTTPS with a certificate for 127.0.0.1 from a CA of its own, written to ca_file
        self.tls = tls
        self.sessions = sessions  # offer a SessionService (redfish_sessions) in front of the emulator
        self.stall_reads = stall_reads  # with sessions: seconds every GET of a system with a session token waits
        self.ca_file = self.dir / "ca.pem"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.username, self.password = username, password
        self.delay, self.power_state = delay, power_state
        self.proc = None
        self.port = 0

    @property
    def endpoint(self) -> str:
        return "%s://127.0.0.1:%d" % ("https" if self.tls else "http", self.port)

    def _tls_args(self) -> list:
        if not self.tls:
            return []
        from homecluster import tls as certs
        ca = certs.make_ca("sushy-emulator-ca")
        self.ca_file.write_bytes(ca.cert_pem)
        cert, key = certs.issue(ca, "sushy-emulator", ["127.0.0.1", "localhost"]).write(self.dir, "emulator")
        return ["--tls-cert", str(cert), "--tls-key", str(key)]

    def _open(self, request):
        import ssl
        import urllib.request
        context = ssl.create_default_context(cafile=str(self.ca_file)) if self.tls else None
        return urllib.request.urlopen(request, timeout=5, context=context)

    def start(self) -> "SushyEmulator":
        import bcrypt
        htpasswd = self.dir / "htpasswd"
        digest = bcrypt.hashpw(self.password.encode(), bcrypt.gensalt(rounds=4)).decode()
        htpasswd.write_text("%s:%s\n" % (self.username, digest))
        cmd = [sys.executable, "-m", "ansible_peers.sushy", "--state-dir", str(self.dir / "state"),
               "--delay", str(self.delay), "--htpasswd", str(htpasswd), "--power-state", self.power_state,
               *self._tls_args(), *(["--sessions"] if self.sessions else []),
               "--stall-reads", str(self.stall_reads)]
        env = {"PYTHONPATH": str(Path(__file__).resolve().parent.parent), "PATH": "/usr/bin:/bin"}
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=open(self.dir / "emulator.log", "ab"),
                                     stdin=subprocess.DEVNULL, env=env, text=True)
        line = self.proc.stdout.readline().strip()
        if not line.isdigit():
            self.stop()
            raise RuntimeError("sushy emulator did not start; see %s" % (self.dir / "emulator.log"))
        self.port = int(line)
        return self

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def power(self) -> str:
        """The system's PowerState as the emulator reports it (plain HTTP, not sushy)."""
        import base64
        import json
        import urllib.request
        request = urllib.request.Request("%s/redfish/v1/Systems/%s" % (self.endpoint, self.system_id))
        token = base64.b64encode(("%s:%s" % (self.username, self.password)).encode()).decode()
        request.add_header("Authorization", "Basic " + token)
        with self._open(request) as response:
            return json.load(response)["PowerState"]

    def patches(self) -> list:
        """The PATCH bodies the emulator received, in order."""
        import json
        path = self.dir / "state" / "patches.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []

    def session_report(self) -> dict:
        """Logins, logouts, open sessions and authenticated requests of the SessionService (``sessions=True``)."""
        from ansible_peers.redfish_sessions import session_report
        return session_report(self.dir / "state" / "sessions.jsonl")

    def system(self) -> dict:
        """The system resource as the emulator serves it."""
        import base64
        import json
        import urllib.request
        request = urllib.request.Request("%s/redfish/v1/Systems/%s" % (self.endpoint, self.system_id))
        token = base64.b64encode(("%s:%s" % (self.username, self.password)).encode()).decode()
        request.add_header("Authorization", "Basic " + token)
        with self._open(request) as response:
            return json.load(response)

    def module_args(self) -> dict:
        # the emulator serves plain HTTP: say so, as a slot must (redfish.insecure)
        return {"endpoint": self.endpoint, "username": self.username, "password": self.password, "insecure": True}


def _main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--state-dir", required=True)
    parser.add_argument("--delay", type=int, default=0)
    parser.add_argument("--htpasswd")
    parser.add_argument("--power-state", default="Off", choices=["On", "Off"])
    parser.add_argument("--tls-cert")
    parser.add_argument("--tls-key")
    parser.add_argument("--sessions", action="store_true", help="offer a SessionService (needs --htpasswd)")
    parser.add_argument("--stall-reads", type=float, default=0, help="with --sessions: delay of token GETs of a system")
    args = parser.parse_args()
    serve(args.state_dir, args.delay, args.htpasswd, args.power_state,
          (args.tls_cert, args.tls_key) if args.tls_cert else None, sessions=args.sessions,
          stall_reads=args.stall_reads)


if __name__ == "__main__":
    _main()
