# -*- coding: utf-8 -*-
# Copyright: homecluster maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Wake-on-LAN power-on driver: sends a magic packet (wakeonlan), power on only.

A magic packet is fire-and-forget: nothing answers it. The driver can confirm a boot
only through an optional check, a TCP port on the machine (e.g. its sshd or kubelet)
that becomes reachable; without one it reports ``unknown`` and the module returns
``confirmed: false``.
"""
from __future__ import annotations

import re

from ansible_collections.homecluster.infra.plugins.module_utils.power_common import (
    OFF, ON, UNKNOWN, PowerDriver, PowerError, tcp_reachable,
)
from ansible_collections.homecluster.infra.plugins.module_utils.power_registry import Library, Method, register

wakeonlan = None  # imported by _import_library() when the method is first used


def _import_library():
    """Import wakeonlan into this file's globals: on the first use of the method, not at import."""
    global wakeonlan  # pylint: disable=global-statement
    import wakeonlan


LIBRARY = Library("wakeonlan", _import_library)


_MAC = re.compile(r"^[0-9a-fA-F]{2}([:-]?)[0-9a-fA-F]{2}(\1[0-9a-fA-F]{2}){4}$")


def valid_mac(mac: str) -> bool:
    """Six hex octets, separated by ':' or '-' (consistently) or not at all."""
    return bool(_MAC.match(mac or ""))


class WolDriver(PowerDriver):
    method = "wol"

    def __init__(self, mac_address: str, broadcast_address: str, port: int,
                 check_host=None, check_port=None, probe_timeout: float = 1.0) -> None:
        LIBRARY.require()
        super().__init__(mac_address)
        self.mac_address = mac_address
        self.broadcast_address = broadcast_address
        self.port = port
        self.check_host = check_host
        self.check_port = check_port
        self.probe_timeout = probe_timeout
        self.can_confirm = bool(check_host and check_port)

    def query(self) -> str:
        if not self.can_confirm:
            return UNKNOWN
        return ON if tcp_reachable(self.check_host, self.check_port, self.probe_timeout) else OFF

    def power_on(self) -> None:
        try:
            wakeonlan.wake(self.mac_address, host=self.broadcast_address, port=self.port)
        except (OSError, ValueError) as exc:
            raise self.error(PowerError.UNREACHABLE, "cannot send the magic packet to %s:%d: %s"
                             % (self.broadcast_address, self.port, exc))


def _check(sub):
    if not valid_mac(sub["mac_address"]):
        return "wol.mac_address %r is not a MAC address (six hex octets, e.g. 52:54:00:12:34:56)" % sub["mac_address"]
    return None


def _build(p):
    return WolDriver(p["mac_address"], p["broadcast_address"], p["port"], p["check_host"], p["check_port"])


register(Method(
    "wol",
    options=dict(
        mac_address=dict(type="str", required=True),
        broadcast_address=dict(type="str", default="255.255.255.255"),
        port=dict(type="int", default=9),
        check_host=dict(type="str"),
        check_port=dict(type="int"),
    ),
    required_together=[["check_host", "check_port"]],
    build=_build, library=LIBRARY, states=("powered_on", "query"),
    check=_check,
))
