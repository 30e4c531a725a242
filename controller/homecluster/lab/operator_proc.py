"""The operator as the lab runs it: `homecluster run` in a subprocess of its own.

Why a subprocess and not a task in the lab's loop: the operator is then exactly what a cluster runs
(its own process, its own event loop, its own signal handling), a crash of it cannot take the lab
down, and a test can kill it and start it again to prove that the operator resumes from status.

The operator's command line belongs to its own module (homecluster.operator.main), which is written
in parallel with the lab. Rather than hard-code its flags, the lab asks that module's argument parser
which of the flags it wants to pass exist (`known_flags`), passes those, and says which it could not.
Settings are passed twice: as flags when the operator has them, and always as HOMECLUSTER_<NAME>
environment variables, which `Settings.from_env` reads.
"""
from __future__ import annotations

import argparse
import asyncio
import importlib
import os
import signal
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from homecluster.lab.sessionproc import stop_session, with_pdeathsig

OPERATOR_MODULE = "homecluster.operator.main"


def unavailable_reason() -> str | None:
    """None when `homecluster run` can be started, else why not (in words a user can act on)."""
    try:
        module = importlib.import_module(OPERATOR_MODULE)
    except ModuleNotFoundError as exc:
        if exc.name and OPERATOR_MODULE.startswith(exc.name):
            return f"the operator ({OPERATOR_MODULE}, `homecluster run`) is not in this tree yet"
        return f"the operator cannot start: {OPERATOR_MODULE} needs the missing module {exc.name!r}"
    except Exception as exc:  # noqa: BLE001 - any import failure means the operator is unusable
        return f"the operator cannot start: importing {OPERATOR_MODULE} failed: {exc}"
    if not (hasattr(module, "add_arguments") and hasattr(module, "run")):
        return f"the operator is not usable yet: {OPERATOR_MODULE} has no add_arguments/run"
    return None


def known_flags() -> frozenset[str]:
    """Every option string `homecluster run` accepts (empty when the operator is unavailable)."""
    if unavailable_reason() is not None:
        return frozenset()
    parser = argparse.ArgumentParser(add_help=False)
    importlib.import_module(OPERATOR_MODULE).add_arguments(parser)
    return frozenset(s for action in parser._actions for s in action.option_strings)


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


# what the lab wants -> flags that may carry it, in order of preference
_WANTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("kubeconfig", ("--kubeconfig",)),
    ("namespace", ("--namespace",)),
    ("provider_address", ("--provider-address",)),
    ("provider_insecure", ("--provider-insecure",)),
    ("webhook_address", ("--webhook-address", "--webhook-listen")),
    ("webhook_cert", ("--webhook-cert", "--webhook-tls-cert")),
    ("webhook_key", ("--webhook-key", "--webhook-tls-key")),
)


def command(options: OperatorOptions, flags: frozenset[str]) -> tuple[list[str], list[str]]:
    """(argv, what could not be passed). Pure: `flags` is what the operator's parser accepts."""
    values: dict[str, str | bool | None] = {
        "kubeconfig": str(options.kubeconfig), "namespace": options.namespace,
        "provider_address": options.provider_address, "provider_insecure": True,
        "webhook_address": options.webhook_address,
        "webhook_cert": str(options.webhook_cert) if options.webhook_cert else None,
        "webhook_key": str(options.webhook_key) if options.webhook_key else None,
    }
    argv = [sys.executable, "-m", "homecluster", "run"]
    missing = []
    for want, candidates in _WANTS:
        value = values[want]
        if value is None:
            continue
        flag = next((c for c in candidates if c in flags), None)
        if flag is None:
            missing.append(f"{want} ({' or '.join(candidates)})")
        elif value is True:
            argv.append(flag)
        else:
            argv += [flag, str(value)]
    for name, value in options.settings.items():
        flag = "--" + name.replace("_", "-")
        if flag in flags:
            argv += [flag, value]
    return argv + list(options.extra_args), missing


def environment(options: OperatorOptions, base: Mapping[str, str]) -> dict[str, str]:
    env = {k: v for k, v in base.items() if not k.startswith("HOMECLUSTER_")}
    env["KUBECONFIG"] = str(options.kubeconfig)
    env["PYTHONUNBUFFERED"] = "1"
    for name, value in options.settings.items():
        env["HOMECLUSTER_" + name.upper()] = value
    return env


class OperatorProcess:
    """A running `homecluster run`; its output goes to `log_path`."""

    def __init__(self, options: OperatorOptions, log_path: Path):
        self.options = options
        self.log_path = log_path
        self.proc: asyncio.subprocess.Process | None = None
        self.missing: list[str] = []

    async def start(self) -> None:
        argv, self.missing = command(self.options, known_flags())
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
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
