# -*- coding: utf-8 -*-
# Copyright: homecluster maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Redfish power driver, built on sushy (ComputerSystem.PowerState and ComputerSystem.Reset)."""
from __future__ import annotations

import os

from ansible_collections.homecluster.infra.plugins.module_utils.power_common import (
    OFF, ON, UNKNOWN, PowerDriver, PowerError, call_with_deadline,
)
from ansible_collections.homecluster.infra.plugins.module_utils.power_registry import Library, Method, register

sushy = sushy_auth = sushy_exceptions = None  # imported by _import_library() when the method is first used


def _import_library():
    """Import sushy into this file's globals: on the first use of the method, not at import."""
    global sushy, sushy_auth, sushy_exceptions  # pylint: disable=global-statement
    import sushy
    from sushy import auth as sushy_auth
    from sushy import exceptions as sushy_exceptions


LIBRARY = Library("sushy", _import_library)


ROOT_PATH = "/redfish/v1"
AUTH_MODES = ("auto", "basic", "session")
LOGOUT_SECONDS = 2.0  # the power operation is over: a BMC that does not answer the logout does not hold the run


def tls_verify(verify_tls: bool, ca_path):
    """What sushy (requests) takes as ``verify``: False, True (the system's CAs) or a CA bundle's path (pure)."""
    if not verify_tls:
        return False
    return ca_path or True


def _auth(mode: str, username: str, password: str):
    """sushy's authentication object for ``mode``: basic (every request carries the password), session
    (one login, then an X-Auth-Token) or auto (a session when the service offers one, else basic)."""
    if mode == "basic":
        return sushy_auth.BasicAuth(username=username, password=password)
    if mode == "session":
        return sushy_auth.SessionAuth(username=username, password=password)
    return sushy_auth.SessionOrBasicAuth(username=username, password=password)


def service_root(endpoint: str) -> str:
    """Accept ``https://bmc`` or ``https://bmc/redfish/v1`` and return the service root URL."""
    base = endpoint.rstrip("/")
    return base if base.endswith(ROOT_PATH) else base + ROOT_PATH


class RedfishDriver(PowerDriver):
    """One ComputerSystem behind one Redfish service.

    ``system_id`` may be omitted when the service has exactly one system (most BMCs).
    """

    method = "redfish"

    def __init__(self, endpoint: str, system_id, username: str, password: str, verify_tls: bool,
                 request_timeout: float = 10.0, ca_path=None, auth: str = "auto") -> None:
        LIBRARY.require()
        super().__init__(endpoint)
        self.root = service_root(endpoint)
        self.system_id = system_id
        self._username = username
        self._password = password
        self.verify_tls = verify_tls
        self.ca_path = ca_path
        self.auth = auth
        self.request_timeout = request_timeout
        self._root = None  # the sushy.Sushy service root, kept so close() can end its session
        self._session_auth = None  # the sushy auth object of _root; its close() DELETEs the session
        self._system = None

    def _classify(self, exc: Exception) -> PowerError:
        if self.auth == "session" and self._root is None:  # the login itself failed (after it, errors are the usual)
            if isinstance(exc, (sushy_exceptions.MissingAttributeError, sushy_exceptions.ResourceNotFoundError,
                                sushy_exceptions.MissingXAuthToken)):
                return self.error(PowerError.UNSUPPORTED, "the service offers no Redfish sessions (%s); set "
                                                          "redfish.auth to basic or auto" % type(exc).__name__)
            if isinstance(exc, sushy_exceptions.AccessError):
                return self.error(PowerError.AUTH, "the service refused the session login of user %r (HTTP %s): wrong "
                                                   "credentials, or a service without Redfish sessions (then set "
                                                   "redfish.auth to basic or auto)"
                                  % (self._username, getattr(exc, "status_code", "401/403")))
        if isinstance(exc, sushy_exceptions.AccessError):
            return self.error(PowerError.AUTH, "the service refused user %r (HTTP %s)" % (self._username, getattr(exc, "status_code", "401/403")))
        if isinstance(exc, sushy_exceptions.ConnectionError) and "CERTIFICATE_VERIFY_FAILED" in str(exc):
            return self.error(PowerError.UNREACHABLE, "the certificate of %s is not trusted: set redfish.ca_path to the "
                                                      "CA that signed it (or redfish.verify_tls: false)" % self.root)
        if isinstance(exc, sushy_exceptions.ConnectionError):
            return self.error(PowerError.UNREACHABLE, "cannot connect to %s (is the BMC up and the URL right?)" % self.root)
        if isinstance(exc, sushy_exceptions.ResourceNotFoundError):
            return self.error(PowerError.PROTOCOL, "not found: %s (check redfish.system_id)" % getattr(exc, "url", exc))
        return self.error(PowerError.PROTOCOL, "%s: %s" % (type(exc).__name__, exc))

    def _get_system(self):
        if self._system is not None:
            return self._system
        try:
            session_auth = _auth(self.auth, self._username, self._password)
            root = sushy.Sushy(self.root, verify=tls_verify(self.verify_tls, self.ca_path), auth=session_auth,
                               # 1, not 0: sushy reads 0 as "3 attempts, 2 s apart" for connection errors
                               server_side_retries=1, server_side_retries_delay=0.5,
                               read_timeout=self.request_timeout, connect_timeout=self.request_timeout)
            # logged in (session or basic): kept before anything else can fail, so close() always logs out
            self._root, self._session_auth = root, session_auth
            if self.system_id:
                path = "%s/Systems/%s" % (ROOT_PATH, self.system_id)
            else:
                members = list(root.get_system_collection().members_identities)
                if len(members) != 1:
                    raise self.error(PowerError.UNEXPECTED,
                                     "the service lists %d systems (%s); set redfish.system_id to one of them"
                                     % (len(members), ", ".join(m.rsplit("/", 1)[-1] for m in members)))
                path = members[0]
            self._system = root.get_system(path)
        except sushy_exceptions.SushyError as exc:
            raise self._classify(exc)
        return self._system

    def query(self) -> str:
        system = self._get_system()
        try:
            system.refresh(force=True)
        except sushy_exceptions.SushyError as exc:
            raise self._classify(exc)
        state = system.power_state
        if state == sushy.PowerState.ON:
            return ON
        if state == sushy.PowerState.OFF:
            return OFF
        return UNKNOWN  # PoweringOn/PoweringOff/Paused: not (yet) the state we wait for

    def _reset(self, reset_type) -> None:
        system = self._get_system()
        try:
            system.reset_system(reset_type)
        except sushy_exceptions.InvalidParameterValueError as exc:
            raise self.error(PowerError.UNSUPPORTED, "the system does not offer reset type %s: %s" % (reset_type.value, exc))
        except sushy_exceptions.SushyError as exc:
            raise self._classify(exc)

    def set_boot_device(self, device: str) -> None:
        """BootSourceOverrideTarget Pxe or Hdd with BootSourceOverrideEnabled Once (a PATCH of the system)."""
        system = self._get_system()
        target = sushy.BootSource.PXE if device == "pxe" else sushy.BootSource.HDD
        try:
            system.set_system_boot_options(target=target, enabled=sushy.BootSourceOverrideEnabled.ONCE)
        except sushy_exceptions.InvalidParameterValueError as exc:
            raise self.error(PowerError.UNSUPPORTED, "the system does not offer boot target %s: %s" % (target.value, exc))
        except sushy_exceptions.SushyError as exc:
            raise self._classify(exc)

    def power_on(self) -> None:
        self._reset(sushy.ResetType.ON)

    def close(self) -> None:
        """End the Redfish session (a DELETE of the session sushy logged in to), so the BMC's few session slots
        are not held until they time out. sushy itself logs out only in ``Sushy.__del__``: at interpreter exit at
        the latest, and never when a call the executor gave up on (a BMC that stopped answering) still holds the
        root in its abandoned thread.

        Basic auth has nothing to end (its close() is a no-op). Best effort and bounded: the power operation
        already succeeded or failed, and its result is what the module reports.
        """
        session_auth, self._session_auth = self._session_auth, None
        self._root = self._system = None
        if session_auth is None:
            return
        try:
            call_with_deadline(session_auth.close, LOGOUT_SECONDS, lambda: TimeoutError("logout"))
        except Exception:  # a BMC that refuses or ignores the logout: its session times out on its own
            pass

    def power_off(self, graceful: bool) -> None:
        self._reset(sushy.ResetType.GRACEFUL_SHUTDOWN if graceful else sushy.ResetType.FORCE_OFF)

    def reset(self) -> None:
        self._reset(sushy.ResetType.FORCE_RESTART)


def _check(sub):
    if not sub["endpoint"].lower().startswith("https://") and not sub["insecure"]:
        return ("redfish.endpoint %r is not https://: the credentials would cross the network in clear; use "
                "https:// or set redfish.insecure: true" % sub["endpoint"])
    if sub["ca_path"] and not os.path.isfile(sub["ca_path"]):
        return "redfish.ca_path %s is not a file (a PEM file of CA certificates)" % sub["ca_path"]
    return None


def _build(p):
    return RedfishDriver(p["endpoint"], p["system_id"], p["username"], p["password"], p["verify_tls"],
                         ca_path=p["ca_path"], auth=p["auth"])


register(Method(
    "redfish",
    options=dict(
        endpoint=dict(type="str", required=True),
        system_id=dict(type="str"),
        verify_tls=dict(type="bool", default=True, aliases=["validate_certs"]),
        ca_path=dict(type="path"),
        auth=dict(type="str", default="auto", choices=list(AUTH_MODES)),
        insecure=dict(type="bool", default=False),
        username=dict(type="str", required=True),
        password=dict(type="str", required=True, no_log=True),
    ),
    build=_build, library=LIBRARY, boot_device=True, check=_check,
))
