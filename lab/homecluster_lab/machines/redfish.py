"""A small real Redfish service for simulated machines (aiohttp, on the lab's event loop).

Why our own service and not sushy-tools' emulator: the emulator's fake driver applies every power
change after a random 1–11 s that cannot be configured, keeps its state in files of a state directory
rather than in our SimMachine, and needs one WSGI server (thread) per BMC. The lab needs the power
change delay under its control (`power_delay_seconds`, 0 by default), the machine's fault knobs
honoured, and a hundred BMCs to cost next to nothing. This service implements the part of Redfish
that power control uses, which is what the `sushy` client and curl exercise:

  GET  /redfish/v1                       ServiceRoot (no authentication, as the standard allows)
  GET  /redfish/v1/Systems               the collection (one member: the machine)
  GET  /redfish/v1/Systems/<id>          ComputerSystem: PowerState, Boot, Actions
  POST /redfish/v1/Systems/<id>/Actions/ComputerSystem.Reset  {"ResetType": On | ForceOff |
       GracefulShutdown | ForceRestart}
  PATCH /redfish/v1/Systems/<id>         Boot.BootSourceOverrideTarget
There is no SessionService: sushy gets 404 for a session and falls back to HTTP basic auth. A bad
or missing login gets 401 with a Redfish error body. Every BMC is its own listening site (its own
port, optionally TLS), all served by one aiohttp application that finds the machine by the port the
request arrived on. `bmc_unreachable` makes the BMC hold the connection without ever answering.
"""
from __future__ import annotations

import asyncio
import base64
import binascii
import hmac
import json
import logging
import ssl
from dataclasses import dataclass

from aiohttp import web

from homecluster_lab.machines.machine import SimMachine

log = logging.getLogger(__name__)

RESET_TYPES = ("On", "ForceOff", "GracefulShutdown", "ForceRestart")
_BOOT_TARGETS = {"None": "default", "Pxe": "network", "Hdd": "hd", "Cd": "optical", "BiosSetup": "setup",
                 "Floppy": "floppy"}
_TARGET_OF_DEVICE = {v: k for k, v in _BOOT_TARGETS.items()}
UNREACHABLE_HOLD_SECONDS = 300.0


@dataclass
class _Bmc:
    machine: SimMachine
    system_id: str
    power_delay_seconds: float
    site: web.TCPSite | None = None
    port: int = 0


_BMC_KEY = web.RequestKey("bmc", _Bmc) if hasattr(web, "RequestKey") else "bmc"  # aiohttp < 3.13: a str


def _error(status: int, message_id: str, message: str) -> web.Response:
    body = {"error": {"code": f"Base.1.8.{message_id}", "message": message,
                      "@Message.ExtendedInfo": [{"MessageId": f"Base.1.8.{message_id}", "Message": message}]}}
    headers = {"WWW-Authenticate": 'Basic realm="homecluster-lab"'} if status == 401 else None
    return web.json_response(body, status=status, headers=headers)


def parse_basic_auth(header: str | None) -> tuple[str, str] | None:
    """(username, password) from an Authorization header, or None when absent or malformed."""
    if not header or not header.lower().startswith("basic "):
        return None
    try:
        user, _, password = base64.b64decode(header[6:].strip(), validate=True).decode("utf-8").partition(":")
    except (binascii.Error, UnicodeDecodeError):
        return None
    return user, password


def reset_action(reset_type: str) -> str | None:
    """The SimMachine method a ResetType maps to, or None when it is not allowed."""
    return {"On": "power_on", "ForceOff": "power_off", "GracefulShutdown": "soft_off",
            "ForceRestart": "reset"}.get(reset_type)


class RedfishService:
    """The Redfish BMCs of the lab. Use inside a running event loop."""

    def __init__(self) -> None:
        self._by_port: dict[int, _Bmc] = {}
        self._by_name: dict[str, _Bmc] = {}
        self._pending: set[asyncio.TimerHandle] = set()
        app = web.Application(middlewares=[self._middleware])
        app.router.add_get("/redfish", self._versions)
        app.router.add_get("/redfish/v1", self._root)
        app.router.add_get("/redfish/v1/", self._root)
        app.router.add_get("/redfish/v1/Systems", self._systems)
        app.router.add_get("/redfish/v1/Systems/{sid}", self._system)
        app.router.add_patch("/redfish/v1/Systems/{sid}", self._patch_system)
        app.router.add_post("/redfish/v1/Systems/{sid}/Actions/ComputerSystem.Reset", self._reset)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        self._started = False

    async def add(self, machine: SimMachine, *, system_id: str | None = None, host: str = "127.0.0.1",
                  port: int = 0, ssl_context: ssl.SSLContext | None = None,
                  power_delay_seconds: float = 0.0) -> int:
        """Start a BMC for `machine`; returns its port. Its endpoint is http(s)://host:port."""
        if machine.credentials is None:
            raise ValueError(f"machine {machine.name}: a Redfish BMC needs credentials (username and password)")
        if not self._started:
            await self._runner.setup()
            self._started = True
        bmc = _Bmc(machine, system_id or machine.name, power_delay_seconds)
        site = web.TCPSite(self._runner, host, port, ssl_context=ssl_context, reuse_address=True)
        await site.start()
        bmc.site = site
        bmc.port = site._server.sockets[0].getsockname()[1]  # the port actually bound (port 0 = ephemeral)
        self._by_port[bmc.port] = bmc
        self._by_name[machine.name] = bmc
        return bmc.port

    def set_power_delay(self, name: str, seconds: float) -> None:
        """How long after an accepted Reset the machine's power changes."""
        self._by_name[name].power_delay_seconds = seconds

    async def remove(self, name: str) -> None:
        bmc = self._by_name.pop(name, None)
        if bmc is not None:
            self._by_port.pop(bmc.port, None)
            if bmc.site is not None:
                await bmc.site.stop()

    async def close(self) -> None:
        for handle in self._pending:
            handle.cancel()
        self._pending.clear()
        if self._started:
            await self._runner.cleanup()
            self._started = False
        self._by_port.clear()
        self._by_name.clear()

    # -- plumbing
    def _bmc_of(self, request: web.Request) -> _Bmc | None:
        sockname = request.transport.get_extra_info("sockname") if request.transport else None
        return self._by_port.get(sockname[1]) if sockname else None

    @web.middleware
    async def _middleware(self, request: web.Request, handler):
        bmc = self._bmc_of(request)
        if bmc is None:
            return _error(404, "ResourceMissingAtURI", "no BMC on this port")
        if bmc.machine.faults.bmc_unreachable:
            await self._hold(bmc)
            if request.transport is not None:
                request.transport.abort()  # close the connection without an answer
            return web.Response(status=503)  # written nowhere: the connection is gone
        request[_BMC_KEY] = bmc
        if getattr(request.match_info, "http_exception", None) is not None:
            # e.g. /redfish/v1/SessionService/Sessions: sushy gets 404 and falls back to basic auth
            return _error(404, "ResourceMissingAtURI", f"{request.path} is not served by this BMC")
        if request.path.rstrip("/") not in ("/redfish", "/redfish/v1"):
            login = parse_basic_auth(request.headers.get("Authorization"))
            if login is None:
                return _error(401, "NoValidSession", "authentication required (HTTP basic)")
            expected = bmc.machine.expected_password(login[0])
            if expected is None or not hmac.compare_digest(expected.encode(), login[1].encode()):
                return _error(401, "NoValidSession", f"invalid username or password for {request.host}")
        return await handler(request)

    @staticmethod
    async def _hold(bmc: _Bmc) -> None:
        """Answer nothing while the fault lasts (up to UNREACHABLE_HOLD_SECONDS)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + UNREACHABLE_HOLD_SECONDS
        while bmc.machine.faults.bmc_unreachable and loop.time() < deadline:
            await asyncio.sleep(0.2)

    def _system_or_404(self, request: web.Request) -> _Bmc | web.Response:
        bmc: _Bmc = request[_BMC_KEY]
        if request.match_info["sid"] != bmc.system_id:
            return _error(404, "ResourceMissingAtURI", f"no system {request.match_info['sid']!r}; "
                                                       f"this BMC has /redfish/v1/Systems/{bmc.system_id}")
        return bmc

    # -- resources
    async def _versions(self, request: web.Request) -> web.Response:
        return web.json_response({"v1": "/redfish/v1/"})

    async def _root(self, request: web.Request) -> web.Response:
        return web.json_response({
            "@odata.type": "#ServiceRoot.v1_5_0.ServiceRoot",
            "@odata.id": "/redfish/v1/",
            "Id": "RootService",
            "Name": "homecluster lab Redfish service",
            "RedfishVersion": "1.6.0",
            "UUID": "00000000-0000-0000-0000-000000000000",
            "Systems": {"@odata.id": "/redfish/v1/Systems"},
            "Links": {},
        })

    async def _systems(self, request: web.Request) -> web.Response:
        bmc: _Bmc = request[_BMC_KEY]
        return web.json_response({
            "@odata.type": "#ComputerSystemCollection.ComputerSystemCollection",
            "@odata.id": "/redfish/v1/Systems",
            "Name": "Computer System Collection",
            "Members@odata.count": 1,
            "Members": [{"@odata.id": f"/redfish/v1/Systems/{bmc.system_id}"}],
        })

    async def _system(self, request: web.Request) -> web.Response:
        bmc = self._system_or_404(request)
        if isinstance(bmc, web.Response):
            return bmc
        machine = bmc.machine
        base = f"/redfish/v1/Systems/{bmc.system_id}"
        return web.json_response({
            "@odata.type": "#ComputerSystem.v1_10_0.ComputerSystem",
            "@odata.id": base,
            "Id": bmc.system_id,
            "Name": machine.name,
            "UUID": "",
            "SystemType": "Physical",
            "PowerState": "On" if machine.bmc_power_state() == "on" else "Off",
            "Status": {"State": "Enabled", "Health": "OK"},
            "Boot": {
                "BootSourceOverrideEnabled": "Once",
                "BootSourceOverrideTarget": _TARGET_OF_DEVICE.get(machine.boot_device, "None"),
                "BootSourceOverrideTarget@Redfish.AllowableValues": list(_BOOT_TARGETS),
            },
            "Actions": {"#ComputerSystem.Reset": {
                "target": f"{base}/Actions/ComputerSystem.Reset",
                "ResetType@Redfish.AllowableValues": list(RESET_TYPES),
            }},
        })

    async def _json_body(self, request: web.Request) -> dict | web.Response:
        try:
            body = await request.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            return _error(400, "MalformedJSON", "the request body is not valid JSON")
        if not isinstance(body, dict):
            return _error(400, "MalformedJSON", "the request body must be a JSON object")
        return body

    async def _reset(self, request: web.Request) -> web.Response:
        bmc = self._system_or_404(request)
        if isinstance(bmc, web.Response):
            return bmc
        body = await self._json_body(request)
        if isinstance(body, web.Response):
            return body
        reset_type = body.get("ResetType")
        method = reset_action(reset_type) if isinstance(reset_type, str) else None
        if method is None:
            return _error(400, "ActionParameterNotSupported",
                          f"ResetType {reset_type!r} is not supported; use one of {', '.join(RESET_TYPES)}")
        apply = getattr(bmc.machine, method)
        if bmc.power_delay_seconds > 0:
            loop = asyncio.get_running_loop()
            handle: asyncio.TimerHandle

            def later() -> None:
                self._pending.discard(handle)
                apply(source="redfish")
            handle = loop.call_later(bmc.power_delay_seconds, later)
            self._pending.add(handle)
        else:
            apply(source="redfish")
        return web.Response(status=204)

    async def _patch_system(self, request: web.Request) -> web.Response:
        bmc = self._system_or_404(request)
        if isinstance(bmc, web.Response):
            return bmc
        body = await self._json_body(request)
        if isinstance(body, web.Response):
            return body
        target = (body.get("Boot") or {}).get("BootSourceOverrideTarget")
        if target is not None:
            if target not in _BOOT_TARGETS:
                return _error(400, "PropertyValueNotInList",
                              f"Boot.BootSourceOverrideTarget {target!r} is not one of {', '.join(_BOOT_TARGETS)}")
            bmc.machine.set_boot_device(_BOOT_TARGETS[target])
        return web.Response(status=204)
