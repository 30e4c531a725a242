"""The operator as the lab runs it: `homecluster run` in a subprocess of its own.

Why a subprocess and not a task in the lab's loop: the operator is then exactly what a cluster runs
(its own process, its own event loop, its own signal handling), a crash of it cannot take the lab
down, and a test can kill it and start it again to prove that the operator resumes from status.

Everything is passed as `homecluster run`'s flags (homecluster.operator.main.add_arguments), the model
settings too (`--<setting-name>`). The environment is the lab's own minus any HOMECLUSTER_<NAME>
variable, which the operator would read as a flag's default.
"""
from __future__ import annotations

import asyncio
import importlib
import os
import re
import signal
import time
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from homecluster_lab.sessionproc import stop_session, with_pdeathsig

OPERATOR_MODULE = "homecluster.operator.main"
BOOT_MODULE = "homecluster_lab.operator_boot"
# what `homecluster run` logs once each server listens, with the port it got (port 0: the kernel's choice)
WEBHOOK_SERVING = re.compile(r"admission webhooks on https://(\S+):(\d+) ")
PROVIDER_SERVING = re.compile(r"autoscaler provider listening on (\S+):(\d+) ")


def unavailable_reason() -> str | None:
    """None when `homecluster run` can be started, else why not (in words a user can act on)."""
    try:
        importlib.import_module(OPERATOR_MODULE)
    except Exception as exc:  # noqa: BLE001 - any import failure means the operator is unusable
        return f"the operator cannot start: importing {OPERATOR_MODULE} failed: {exc}"
    return None


@dataclass(frozen=True)
class OperatorOptions:
    """What the lab wants the operator to use."""

    kubeconfig: Path
    namespace: str
    provider_address: str
    webhook_address: str | None = None  # host:port
    webhook_cert: Path | None = None
    webhook_key: Path | None = None
    settings: Mapping[str, str] = field(default_factory=dict)  # setting name -> value string
    extra_args: Sequence[str] = ()
    provider_tls: tuple[Path, Path, Path] | None = None  # cert, key, client CA: mTLS instead of --provider-insecure


def command(options: OperatorOptions) -> list[str]:
    """The operator's argv: `homecluster run` through homecluster_lab.operator_boot (the product as its image
    runs it, without the lab's client libraries). Pure."""
    argv = [sys.executable, "-m", BOOT_MODULE, "run", "--kubeconfig", str(options.kubeconfig),
            "--namespace", options.namespace, "--provider-address", options.provider_address]
    if options.provider_tls:
        cert, key, client_ca = options.provider_tls
        argv += ["--provider-cert", str(cert), "--provider-key", str(key), "--provider-client-ca", str(client_ca)]
    else:
        argv.append("--provider-insecure")
    if options.webhook_address:
        argv += ["--webhook-address", options.webhook_address]
    if options.webhook_cert and options.webhook_key:
        argv += ["--webhook-cert", str(options.webhook_cert), "--webhook-key", str(options.webhook_key)]
    for name, value in options.settings.items():
        argv += ["--" + name.replace("_", "-"), value]
    return argv + list(options.extra_args)


def environment(options: OperatorOptions, base: Mapping[str, str]) -> dict[str, str]:
    env = {k: v for k, v in base.items() if not k.startswith("HOMECLUSTER_")}
    env["KUBECONFIG"] = str(options.kubeconfig)
    env["PYTHONUNBUFFERED"] = "1"
    return env


class OperatorProcess:
    """A running `homecluster run`; its output goes to `log_path`."""

    def __init__(self, options: OperatorOptions, log_path: Path):
        self.options = options
        self.log_path = log_path
        self.proc: asyncio.subprocess.Process | None = None
        self._log_start = 0  # where this start's lines begin in log_path (it is appended to)

    async def start(self) -> None:
        argv = command(self.options)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log_start = self.log_path.stat().st_size if self.log_path.exists() else 0
        with open(self.log_path, "ab") as log:
            # its own session: a Ctrl-C in the terminal reaches the lab only, which stops the operator first;
            # and a parent-death signal (util-linux setpriv, not preexec_fn: the lab has threads), so a lab
            # or a test run that is killed outright does not leave the operator running
            self.proc = await asyncio.create_subprocess_exec(
                *with_pdeathsig(argv), stdin=asyncio.subprocess.DEVNULL, stdout=log,
                stderr=asyncio.subprocess.STDOUT, env=environment(self.options, os.environ), start_new_session=True)

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def exited(self) -> int | None:
        return self.proc.returncode if self.proc else None

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    async def served_addresses(self, timeout: float) -> tuple[str | None, str]:
        """(webhook host:port or None when it serves none, provider host:port) as this start's log reports them:
        start it with port 0 (`127.0.0.1:0`) and read the ports the kernel gave, so no port is picked and let
        go (homecluster_lab.ports). RuntimeError with the log's tail if it exits or does not serve in time."""
        deadline = time.monotonic() + timeout
        wants_webhook = "--no-webhook" not in self.options.extra_args
        while True:
            with open(self.log_path, "rb") as f:
                f.seek(self._log_start)
                text = f.read().decode(errors="replace")
            webhook, provider = WEBHOOK_SERVING.search(text), PROVIDER_SERVING.search(text)
            if provider and (webhook or not wants_webhook):
                return (":".join(webhook.groups()) if webhook else None), ":".join(provider.groups())
            if self.exited() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the operator did not report its webhook and provider ports "
                                   f"({'exited ' + str(self.exited()) if self.exited() is not None else 'timed out'})"
                                   f":\n{self.log_tail()}")
            await asyncio.sleep(0.05)

    async def kill(self) -> None:
        """SIGKILL the operator's process group at once: what a crash (or the OOM killer) does."""
        if self.proc is None or self.proc.returncode is not None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        await self.proc.wait()

    async def stop(self, grace: float = 5.0) -> None:
        """SIGTERM (kopf stops its handlers and closes its watches), SIGKILL the whole tree after `grace`."""
        await stop_session(self.proc, grace)
