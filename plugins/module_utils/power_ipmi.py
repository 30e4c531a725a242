# -*- coding: utf-8 -*-
# Copyright: homecluster maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""IPMI (RMCP+ over UDP) power driver, built on pyghmi's client."""
from __future__ import annotations

from ansible_collections.homecluster.infra.plugins.module_utils.power_common import (
    OFF, ON, PowerDriver, PowerError, call_with_deadline,
)
from ansible_collections.homecluster.infra.plugins.module_utils.power_registry import Library, Method, register

pyghmi_exceptions = pyghmi_command = None  # imported by _import_library() when the method is first used


def _import_library():
    """Import pyghmi into this file's globals: on the first use of the method, not at import."""
    global pyghmi_exceptions, pyghmi_command  # pylint: disable=global-statement
    from pyghmi import exceptions as pyghmi_exceptions
    from pyghmi.ipmi import command as pyghmi_command


LIBRARY = Library("pyghmi", _import_library)


# pyghmi's words for the chassis power commands.
_GRACEFUL_OFF = "shutdown"  # ACPI soft-off: the OS shuts down
_FORCED_OFF = "off"         # cut the power
_BOOT_DEVICES = {"pxe": "network", "disk": "hd"}
_AUTH_HINTS = ("password", "unauthorized", "username", "privilege", "authentication")
MAX_KG = 20  # bytes: the IPMI 2.0 BMC key


def kg_bytes(text):
    """The BMC key (Kg) given in hex (optionally 0x-prefixed), as bytes; None when it is not 1 to MAX_KG bytes
    of hex. Pure; the message that refuses it never shows the value."""
    digits = text.strip()
    if digits[:2].lower() == "0x":
        digits = digits[2:]
    if not digits or len(digits) % 2 or len(digits) > 2 * MAX_KG:
        return None
    try:
        return bytes.fromhex(digits)
    except ValueError:
        return None


class IpmiDriver(PowerDriver):
    """Speaks to one BMC. pyghmi keeps no long-lived session here (keepalive off):
    the module is a short process and a keepalive thread would only outlive it."""

    method = "ipmi"

    def __init__(self, address: str, port: int, username: str, password: str, kg=None) -> None:
        LIBRARY.require()
        super().__init__("%s:%d" % (address, port))
        self.address = address
        self.port = port
        self._username = username
        self._password = password
        self._kg = kg  # bytes, or None: the password serves as Kg
        self._command = None

    def _classify(self, exc: Exception) -> PowerError:
        """Turn pyghmi's exceptions into PowerError kinds.

        A silent port makes pyghmi raise IpmiException(None) after about 5 s; a wrong
        password is reported at once with a message that says so.
        """
        text = str(exc.args[0]) if getattr(exc, "args", None) and exc.args[0] is not None else ""
        if not text:
            return self.error(PowerError.UNREACHABLE, "no IPMI answer from %s (is the BMC up and the port right?)" % self.host)
        if "kg" in text.lower().replace("(", " ").replace("?", " ").split():
            # a BMC with a key of its own (Kg) answers a session without it, or with another, this way
            return self.error(PowerError.AUTH, "the BMC refused the session key: set ipmi.key to the BMC's Kg, or "
                                               "check it (%s)" % text)
        if any(hint in text.lower() for hint in _AUTH_HINTS):
            return self.error(PowerError.AUTH, "the BMC refused user %r: %s" % (self._username, text))
        return self.error(PowerError.PROTOCOL, text)

    def _session(self):
        if self._command is None:
            try:
                self._command = pyghmi_command.Command(
                    bmc=self.address, userid=self._username, password=self._password,
                    port=self.port, kg=self._kg, keepalive=False)
            except pyghmi_exceptions.IpmiException as exc:
                raise self._classify(exc)
        return self._command

    def _do(self, fn):
        try:
            return fn(self._session())
        except pyghmi_exceptions.IpmiException as exc:
            raise self._classify(exc)

    def query(self) -> str:
        answer = self._do(lambda c: c.get_power())
        state = answer.get("powerstate") if isinstance(answer, dict) else None
        if state not in (ON, OFF):
            raise self.error(PowerError.UNEXPECTED, "the BMC answered %r to get-power" % (answer,))
        return state

    def power_on(self) -> None:
        self._do(lambda c: c.set_power("on", wait=False))

    def power_off(self, graceful: bool) -> None:
        self._do(lambda c: c.set_power(_GRACEFUL_OFF if graceful else _FORCED_OFF, wait=False))

    def reset(self) -> None:
        self._do(lambda c: c.set_power("reset", wait=False))

    def set_boot_device(self, device: str) -> None:
        # pyghmi's names; persist=False: the BMC's boot flags are valid for the next boot only
        self._do(lambda c: c.set_bootdev(_BOOT_DEVICES[device], persist=False))

    def close(self) -> None:
        """Log out, so the BMC's few session slots are not held until they time out.

        pyghmi cannot reuse a session after logout: one driver is one module run.
        """
        command, self._command = self._command, None
        if command is None:
            return
        try:
            call_with_deadline(command.ipmi_session.logout, 2.0, lambda: TimeoutError("logout"))
        except Exception:  # the power operation already succeeded or failed; logout is best effort
            pass


def _check(sub):
    if sub.get("key") is not None and kg_bytes(sub["key"]) is None:
        return ("ipmi.key is not a BMC key: give it in hex, at most %d bytes (%d hex digits), as ipmitool -y takes it"
                % (MAX_KG, 2 * MAX_KG))
    return None


def _build(p):
    return IpmiDriver(p["address"], p["port"], p["username"], p["password"],
                      kg=kg_bytes(p["key"]) if p.get("key") is not None else None)


register(Method(
    "ipmi",
    options=dict(
        address=dict(type="str", required=True),
        port=dict(type="int", default=623),
        username=dict(type="str", required=True),
        password=dict(type="str", required=True, no_log=True),
        key=dict(type="str", no_log=True, aliases=["kg"]),
    ),
    build=_build, library=LIBRARY, boot_device=True, check=_check,
))
