# -*- coding: utf-8 -*-
# Copyright: homecluster maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The interface every power method implements, and the error every method raises.

One small contract keeps machine_power free of protocol details: a driver answers
``query()`` with "on", "off" or "unknown", and performs ``power_on``, ``power_off``
(graceful or forced) and ``reset``. Drivers never wait for a state themselves; the
executor (power_execute) owns the waiting, so every method shares one timeout rule.
"""
from __future__ import annotations

import socket
import threading

ON = "on"
OFF = "off"
UNKNOWN = "unknown"


class PowerError(Exception):
    """A power operation failed; the message names the method, the host and the cause.

    ``kind`` is one of the class constants, so callers and tests can tell an unreachable
    BMC from wrong credentials without parsing text.
    """

    UNREACHABLE = "unreachable"
    AUTH = "bad credentials"
    TIMEOUT = "timeout"
    UNEXPECTED = "unexpected state"
    PROTOCOL = "protocol error"
    UNSUPPORTED = "unsupported"

    def __init__(self, kind: str, method: str, host: str, cause: str) -> None:
        self.kind = kind
        self.method = method
        self.host = host
        self.cause = cause
        super().__init__("%s power control of %s failed (%s): %s" % (method, host, kind, cause))


class PowerDriver:
    """Base class of the per-method drivers.

    ``can_confirm`` is False for a method that cannot observe the machine (Wake-on-LAN
    without a reachability check): the executor then reports ``confirmed: false`` instead
    of waiting for a state it can never see.
    """

    method = "none"
    can_confirm = True

    def __init__(self, host: str) -> None:
        self.host = host

    def error(self, kind: str, cause: str) -> PowerError:
        return PowerError(kind, self.method, self.host, cause)

    def query(self) -> str:
        raise self.error(PowerError.UNSUPPORTED, "this method cannot read the power state")

    def power_on(self) -> None:
        raise self.error(PowerError.UNSUPPORTED, "this method cannot power a machine on")

    def power_off(self, graceful: bool) -> None:
        raise self.error(PowerError.UNSUPPORTED, "this method cannot power a machine off")

    def reset(self) -> None:
        raise self.error(PowerError.UNSUPPORTED, "this method cannot reset a machine")

    def set_boot_device(self, device: str) -> None:
        """Boot from ``device`` ("pxe" or "disk") at the next boot only."""
        raise self.error(PowerError.UNSUPPORTED, "this method cannot set a boot device")

    def close(self) -> None:
        """Release sessions; drivers without any keep this no-op."""


def call_with_deadline(fn, seconds: float, on_timeout):
    """Run ``fn()`` in a daemon thread and give up after ``seconds``.

    Protocol libraries have their own, sometimes long, retry loops (pyghmi waits about
    5 s for a silent BMC regardless of what we want). A daemon thread lets the module
    fail within its own timeout; the abandoned thread dies with the process.
    ``on_timeout()`` builds the exception raised when time runs out.
    """
    box = {}

    def target():
        try:
            box["value"] = fn()
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc

    worker = threading.Thread(target=target, name="power-call", daemon=True)
    worker.start()
    worker.join(max(seconds, 0.0))
    if worker.is_alive():
        raise on_timeout()
    if "error" in box:
        raise box["error"]
    return box.get("value")


def tcp_reachable(host: str, port: int, timeout: float) -> bool:
    """True when a TCP connection to host:port opens within ``timeout`` seconds.

    Used as the power probe of methods with no BMC: an SSH port that stops answering
    confirms a power-off, a service port that starts answering confirms a Wake-on-LAN boot.
    """
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False
