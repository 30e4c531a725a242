"""A simulated machine: identity, power state, fault knobs, and the boot model's clock.

Its BMC endpoints (IPMI in a thread, Redfish, Wake-on-LAN and SSH on the event loop) call the power
methods; its kubelet reads `view()`. All state sits behind one lock, so threads and the event loop
may call in at any time. Transitions the machine makes by itself (a graceful shutdown completing,
`powers_off_while_ready`) are applied lazily, at the moment they were due, whenever anyone looks:
no timer task per machine is needed. Observers (the kubelet, the SSH gate) subscribe to be woken
when something changes; the callback runs in the caller's thread and must only schedule work.
"""
from __future__ import annotations

import collections
import dataclasses
import threading
import time
from dataclasses import dataclass
from typing import Callable

from homecluster_lab.machines.boot import Faults, NodeView, PowerRecord, Timing, node_view, self_power_off_at
from homecluster_lab.machines.listeners import Listener, Listeners
from homecluster_lab.node.identity import Identity, Taint  # noqa: F401 (a machine's identity; Taint for callers)

BMC_SOURCES = ("ipmi", "redfish", "wol", "ssh")  # where a power command comes from the network
BOOT_DEVICES = ("default", "network", "hd", "optical", "setup", "floppy", "safe")


@dataclass(frozen=True)
class Credentials:
    """The username and password a BMC accepts (IPMI, Redfish)."""

    username: str
    password: str

    def __repr__(self) -> str:  # never print the password
        return f"Credentials(username={self.username!r}, password=***)"


@dataclass(frozen=True)
class PowerEvent:
    at: float  # wall clock (time.time())
    action: str  # "on", "off", "soft-off", "reset", "self-off", "ignored-soft-off", ...
    source: str  # "ipmi", "redfish", "wol", "ssh", "lab", "machine"


class SimMachine:
    """One simulated machine. Thread-safe; see the module docstring."""

    def __init__(self, identity: Identity, *, timing: Timing = Timing(), faults: Faults | None = None,
                 credentials: Credentials | None = None, clock: Callable[[], float] = time.monotonic,
                 powered_on: bool = False) -> None:
        self.identity = identity
        self.timing = timing
        self.credentials = credentials
        self._clock = clock
        self._lock = threading.RLock()
        self._faults = dataclasses.replace(faults) if faults else Faults()
        self._rec = PowerRecord()
        self._boot_device = "default"
        self._listeners = Listeners()
        self.events: collections.deque[PowerEvent] = collections.deque(maxlen=200)
        if powered_on:
            self._rec = PowerRecord(on=True, on_since=clock() - timing.boot_seconds
                                    - timing.ready_taints_clear_seconds, boot_count=1)

    # -- identity shortcuts
    @property
    def name(self) -> str:
        return self.identity.name

    @property
    def mac(self) -> str:
        return self.identity.mac

    def __repr__(self) -> str:
        return f"SimMachine({self.name!r}, power={self.power_state()})"

    # -- observers
    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call `listener()` after every change; returns the function that unsubscribes."""
        return self._listeners.subscribe(listener)

    def _notify(self) -> None:
        self._listeners.notify()

    # -- the record, settled lazily
    def _settle(self, now: float) -> None:
        """Apply any transition the machine made by itself at or before `now` (lock held)."""
        off_at = self_power_off_at(self._rec, self._faults, self.timing)
        if off_at is not None and off_at <= now:
            self._rec = dataclasses.replace(self._rec, on=False, kubelet_stopped_at=off_at,
                                            shutdown_requested_at=None)
            self.events.append(PowerEvent(time.time() - (now - off_at), "self-off", "machine"))

    def _change(self, action: str, source: str, update: Callable[[PowerRecord, float], PowerRecord | None]) -> bool:
        with self._lock:
            now = self._clock()
            self._settle(now)
            if self._faults.ignores_power_commands and source in BMC_SOURCES:
                self.events.append(PowerEvent(time.time(), f"noop-{action}", source))
                return True  # accepted, as such a BMC answers, and nothing happens
            new = update(self._rec, now)
            changed = new is not None and new != self._rec
            if new is not None:
                self._rec = new
            self.events.append(PowerEvent(time.time(), action if new is not None else f"ignored-{action}", source))
        if changed:
            self._notify()
        return new is not None

    # -- power, as a BMC or the network sees it
    def power_state(self) -> str:
        """"on" or "off"."""
        with self._lock:
            self._settle(self._clock())
            return "on" if self._rec.on else "off"

    def bmc_power_state(self) -> str:
        """The power state the BMC reports: the real one, or its opposite with `power_readback_lies`."""
        with self._lock:
            real = self.power_state()
            if self._faults.power_readback_lies:
                return "off" if real == "on" else "on"
            return real

    def power_on(self, source: str = "lab") -> bool:
        """Press the power button (a no-op when already on). Returns True (accepted)."""
        def update(rec: PowerRecord, now: float) -> PowerRecord:
            if rec.on:
                return rec
            return dataclasses.replace(rec, on=True, on_since=now, shutdown_requested_at=None,
                                       boot_count=rec.boot_count + 1)
        return self._change("on", source, update)

    def power_off(self, source: str = "lab") -> bool:
        """Cut the power at once (hard off)."""
        def update(rec: PowerRecord, now: float) -> PowerRecord:
            if not rec.on:
                return rec
            return dataclasses.replace(rec, on=False, kubelet_stopped_at=now, shutdown_requested_at=None)
        return self._change("off", source, update)

    def soft_off(self, source: str = "lab") -> bool:
        """Ask the OS to shut down (ACPI soft off); done after graceful_shutdown_seconds.

        Returns False when the request was ignored (`ignores_graceful_shutdown`)."""
        def update(rec: PowerRecord, now: float) -> PowerRecord | None:
            if self._faults.ignores_graceful_shutdown:
                return None
            if not rec.on or rec.shutdown_requested_at is not None:
                return rec
            return dataclasses.replace(rec, shutdown_requested_at=now)
        return self._change("soft-off", source, update)

    def reset(self, source: str = "lab") -> bool:
        """Hard reset: the OS restarts; a machine that is off stays off."""
        def update(rec: PowerRecord, now: float) -> PowerRecord:
            if not rec.on:
                return rec
            return dataclasses.replace(rec, on_since=now, kubelet_stopped_at=now, shutdown_requested_at=None,
                                       boot_count=rec.boot_count + 1)
        return self._change("reset", source, update)

    @property
    def boot_device(self) -> str:
        with self._lock:
            return self._boot_device

    def set_boot_device(self, device: str) -> None:
        if device not in BOOT_DEVICES:
            raise ValueError(f"machine {self.name}: unknown boot device {device!r}; use one of {BOOT_DEVICES}")
        with self._lock:
            self._boot_device = device

    # -- credentials and faults
    def accepts(self, username: str, password: str) -> bool:
        """Whether the BMC accepts this login; `wrong_credentials` rejects even the right one."""
        expected = self.expected_password(username)
        return expected is not None and expected == password

    def expected_password(self, username: str) -> str | None:
        """The password the BMC checks against for `username` (None: unknown user).

        With `wrong_credentials` it is a value no client knows, so the right password fails."""
        if self.credentials is None or username != self.credentials.username:
            return None
        if self.faults.wrong_credentials:
            return self.credentials.password + "\x00rejected"
        return self.credentials.password

    @property
    def faults(self) -> Faults:
        """A copy of the fault knobs; change them with set_faults()."""
        with self._lock:
            return dataclasses.replace(self._faults)

    def set_faults(self, **changes: object) -> Faults:
        """Change fault knobs by name, e.g. set_faults(flaps=True). Unknown names raise TypeError."""
        known = {f.name for f in dataclasses.fields(Faults)}
        unknown = sorted(set(changes) - known)
        if unknown:
            raise TypeError(f"machine {self.name}: unknown fault knob(s) {unknown}; known: {sorted(known)}")
        with self._lock:
            self._settle(self._clock())
            self._faults = dataclasses.replace(self._faults, **changes)
            result = dataclasses.replace(self._faults)
        self._notify()
        return result

    # -- what the kubelet and the SSH gate read
    def view(self) -> NodeView:
        with self._lock:
            now = self._clock()
            self._settle(now)
            return node_view(self._rec, self._faults, self.timing, now)

    def now(self) -> float:
        return self._clock()
