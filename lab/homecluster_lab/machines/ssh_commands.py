"""What a command run over SSH does to a simulated machine (pure).

A machine without a BMC is powered off by running a command over SSH (`spec.power.ssh.command`,
"poweroff" by default). The lab reads the command the way a Linux host would.
"""
from __future__ import annotations

import enum
import shlex


class Effect(enum.Enum):
    SOFT_OFF = "soft-off"  # an orderly shutdown: ignored by `ignores_graceful_shutdown`
    HARD_OFF = "hard-off"  # poweroff -f: the power goes at once
    REBOOT = "reboot"
    NOOP = "noop"  # harmless commands, e.g. a connectivity check
    UNKNOWN = "unknown"  # "command not found"


_SOFT_OFF = {("poweroff",), ("shutdown",), ("shutdown", "now"), ("shutdown", "-h", "now"), ("shutdown", "-P", "now"),
             ("shutdown", "-h", "+0"), ("systemctl", "poweroff"), ("halt", "-p"), ("init", "0"), ("telinit", "0")}
_HARD_OFF = {("poweroff", "-f"), ("poweroff", "--force"), ("poweroff", "-ff"), ("poweroff", "-f", "-f"),
             ("systemctl", "poweroff", "--force", "--force"), ("systemctl", "poweroff", "-ff"),
             ("systemctl", "poweroff", "--force"), ("halt", "-p", "-f"), ("halt", "-pf")}
_REBOOT = {("reboot",), ("reboot", "-f"), ("shutdown", "-r", "now"), ("systemctl", "reboot"), ("init", "6")}
_NOOP = {"true", ":", "hostname", "uptime", "echo", "id", "whoami", "exit", "sync"}


def classify_command(command: str) -> Effect:
    """The effect of `command` (as sshd passes it in SSH_ORIGINAL_COMMAND)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return Effect.UNKNOWN
    while words and words[0] in ("sudo", "-n", "doas", "exec", "nohup"):
        words = words[1:]
    if words and words[0].startswith("/") and words[0].rsplit("/", 1)[-1] in (
            "poweroff", "shutdown", "systemctl", "halt", "reboot", "init"):
        words[0] = words[0].rsplit("/", 1)[-1]  # /sbin/poweroff
    key = tuple(words)
    if not words:
        return Effect.NOOP
    if key in _HARD_OFF:
        return Effect.HARD_OFF
    if key in _SOFT_OFF:
        return Effect.SOFT_OFF
    if key in _REBOOT:
        return Effect.REBOOT
    if words[0] in _NOOP:
        return Effect.NOOP
    return Effect.UNKNOWN
