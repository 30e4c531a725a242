"""The TCP port a simulated machine answers on while its operating system is up (the slot's spec.bootCheck).

A real machine's sshd (or kubelet) starts answering when its OS has booted and stops when it powers
off; the startup Job waits for that port after the power-on. Every simulated machine and every qemu VM
of the lab (whose sshd sits behind qemu's port forward, which accepts before the guest does) gets this
listener: listening on a fixed loopback port exactly while `machine.view().os_up` (so connecting to a
machine that is off or still booting is refused), greeting each connection with an SSH-style banner and
closing it -- or, for a Wake-on-LAN machine, handing it to a real sshd (ssh.py).

The port is held from start() to close() (ports.HeldPort): the listener comes and goes with the OS,
the port stays ours, so no other process can take it while the machine is off.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging

import socket
from collections.abc import Awaitable, Callable
from typing import Any

from homecluster_lab.ports import HeldPort

log = logging.getLogger(__name__)
BANNER = b"SSH-2.0-homecluster-lab\r\n"


class BootPort:
    """A listener on host:port, open exactly while the machine's OS is up."""

    def __init__(self, machine: Any, *, host: str = "127.0.0.1",
                 serve: Callable[[socket.socket], Awaitable[None]] | None = None) -> None:
        """`machine`: a SimMachine, or a VM's VmNode (both offer name, view(), now() and subscribe()).
        `serve(connection)` answers one accepted connection and closes it (default: the banner)."""
        self.machine = machine
        self.host = host
        self.port = 0
        self._serve = serve or greet
        self._held: HeldPort | None = None
        self._server: asyncio.Task | None = None  # the accept loop, while the OS is up
        self._listener: socket.socket | None = None
        self._connections: set[asyncio.Task] = set()
        self._gate: asyncio.Task | None = None
        self._wake = asyncio.Event()
        self._unsubscribe = None

    async def start(self) -> None:
        self._held = HeldPort(self.host)
        self.port = self._held.port
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
        await self._close_server(connections=True)
        if self._held is not None:
            self._held.close()
            self._held = None

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
            assert self._held is not None, "start() first"
            self._listener = self._held.listener()
            self._server = asyncio.create_task(self._accept(self._listener), name=f"boot-port-accept-{self.port}")
        elif not up and self._server is not None:
            await self._close_server()

    async def _accept(self, listener: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        while True:
            connection, _ = await loop.sock_accept(listener)
            task = asyncio.create_task(self._serve(connection))
            self._connections.add(task)
            task.add_done_callback(self._connections.discard)

    async def _close_server(self, *, connections: bool = False) -> None:
        """Stop listening (connections are refused again); with `connections`, end the open ones too (a
        power-off leaves a session to end by itself, as a real machine's sshd may answer its last words)."""
        server, self._server = self._server, None
        listener, self._listener = self._listener, None
        tasks = [t for t in (server, *(self._connections if connections else ())) if t is not None]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        if listener is not None:
            listener.close()


async def greet(connection: socket.socket) -> None:
    """Send the banner and close (what a boot check sees of a machine whose OS is up)."""
    with connection:
        with contextlib.suppress(OSError):
            connection.setblocking(False)
            await asyncio.get_running_loop().sock_sendall(connection, BANNER)
