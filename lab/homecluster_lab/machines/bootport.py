"""The TCP port a simulated machine answers on while its operating system is up (the slot's spec.bootCheck).

A real machine's sshd (or kubelet) starts answering when its OS has booted and stops when it powers
off; the startup Job waits for that port after the power-on. A Wake-on-LAN machine of the lab already
runs a real sshd gated on its OS (ssh.py); an IPMI or Redfish machine, and every qemu VM of the lab (whose
sshd sits behind qemu's port forward, which accepts before the guest does), gets this listener: bound
on a fixed loopback port exactly while `machine.view().os_up` (so connecting to a machine that is off or
still booting is refused), greeting each connection with an SSH-style banner and closing it.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging

from typing import Any

from homecluster_lab.machines.ssh import free_tcp_port

log = logging.getLogger(__name__)
BANNER = b"SSH-2.0-homecluster-lab\r\n"


class BootPort:
    """A listener on host:port, open exactly while the machine's OS is up."""

    def __init__(self, machine: Any, *, host: str = "127.0.0.1") -> None:
        """`machine`: a SimMachine, or a VM's VmNode (both offer name, view(), now() and subscribe())."""
        self.machine = machine
        self.host = host
        self.port = 0
        self._server: asyncio.AbstractServer | None = None
        self._gate: asyncio.Task | None = None
        self._wake = asyncio.Event()
        self._unsubscribe = None

    async def start(self) -> None:
        self.port = free_tcp_port(self.host)
        loop = asyncio.get_running_loop()
        self._unsubscribe = self.machine.subscribe(lambda: loop.call_soon_threadsafe(self._wake.set))
        await self._sync()
        self._gate = asyncio.create_task(self._run_gate(), name=f"boot-port-{self.machine.name}")

    async def close(self) -> None:
        if self._unsubscribe:
            self._unsubscribe()
        if self._gate is not None:
            self._gate.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._gate
            self._gate = None
        await self._close_server()

    @property
    def listening(self) -> bool:
        return self._server is not None

    async def _run_gate(self) -> None:
        while True:
            self._wake.clear()
            view = self.machine.view()
            try:
                await self._sync()
            except OSError:
                log.exception("machine %s: could not open the boot check port %d; retrying", self.machine.name,
                              self.port)
                await asyncio.sleep(0.5)
                continue
            timeout = None if view.next_change is None else max(0.01, view.next_change - self.machine.now())
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout)

    async def _sync(self) -> None:
        up = self.machine.view().os_up
        if up and self._server is None:
            self._server = await asyncio.start_server(self._greet, self.host, self.port)
        elif not up and self._server is not None:
            await self._close_server()

    async def _close_server(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(server.wait_closed(), 2)

    @staticmethod
    async def _greet(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError):
            writer.write(BANNER)
            await writer.drain()
        writer.close()
