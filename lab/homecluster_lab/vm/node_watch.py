"""The host-side view of a lab VM's node: what its kubelet would report, read from outside the guest.

The guest is a busybox initramfs with no kubelet in it, so the lab's kubelet
(homecluster_lab.node.kubelet.Kubelet) runs on the host and watches the VM:

- the qemu process is alive (pid file + /proc), and
- the guest printed its boot marker (`HOMECLUSTER-BOOTED slot=<name>`) on the serial console in
  this boot, which init prints once dropbear listens, i.e. when SSH answers.

Both together mean "the OS is up and the kubelet runs": the Node is registered and Ready. When the
qemu process goes (power-off, `poweroff -f`, a kill) or a new qemu process replaces it (reset), the
"kubelet" stops: the Node turns NotReady, then Unknown. A hanging boot (the image's hang knob) never
prints the marker, so it never registers.

`VmNode` offers exactly what Kubelet reads from a SimMachine (identity, view(), now(), subscribe(),
faults) by feeding the pure boot model (homecluster_lab.machines.boot.node_view) a PowerRecord whose
"on" means "the guest is up": boot_seconds is 0 because the real boot already happened when the
marker shows. `poll()` does the watching; VmFleet calls it a few times per second. The decision
(`observe`) is pure and separate from the reading.
"""
from __future__ import annotations

import dataclasses
import logging
import os
import threading
import time
from dataclasses import dataclass
from typing import Callable

from homecluster_lab.machines.boot import Faults, PowerRecord, Timing, node_view
from homecluster_lab.machines.listeners import Listener, Listeners
from homecluster_lab.node.identity import Identity
from homecluster_lab.node.view import NodeView

from . import procs
from .chassis import SOFT_OFF_PID_FILE
from .guest_init import BOOT_MARKER
from .machine import VmMachine

log = logging.getLogger(__name__)

# The fault knobs (names of boot.Faults fields) a VM honours; the others are simulation-only.
VM_KNOBS = ("never_boots",)


@dataclass(frozen=True)
class Observation:
    """One look at the VM from the host: the qemu pid (None: off) and whether this boot's marker showed."""

    pid: int | None
    booted: bool


def observe(rec: PowerRecord, pid_before: int | None, seen: Observation, now: float) -> PowerRecord:
    """The new record after seeing `seen` (pure).

    A different pid (power-off, or a new qemu process) stops the kubelet if it ran; the marker of
    the current pid starts it (a new boot: boot_count + 1).
    """
    if seen.pid != pid_before and rec.on:
        rec = dataclasses.replace(rec, on=False, kubelet_stopped_at=now)
    if seen.pid is not None and seen.booted and not rec.on:
        rec = dataclasses.replace(rec, on=True, on_since=now, boot_count=rec.boot_count + 1)
    return rec


class VmNode:
    """A VmMachine seen as the lab's kubelet and fault knobs see a SimMachine. Thread-safe."""

    def __init__(self, machine: VmMachine, identity: Identity, *, ready_taints_clear_seconds: float = 1.0,
                 unknown_after_seconds: float = 5.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.machine = machine
        self.vm = machine.vm
        self.identity = identity
        self.timing = Timing(boot_seconds=0.0, ready_taints_clear_seconds=ready_taints_clear_seconds,
                             unknown_after_seconds=unknown_after_seconds)
        self._clock = clock
        self._lock = threading.RLock()
        self._rec = PowerRecord()
        self._pid: int | None = None
        self._listeners = Listeners()
        self._marker = f"{BOOT_MARKER} slot={self.vm.name}\n"
        self._orphans: set[int] = set()  # finished processes of this VM to collect (procs.reap)

    @property
    def name(self) -> str:
        return self.identity.name

    @property
    def mac(self) -> str:
        return self.identity.mac

    def __repr__(self) -> str:
        return f"VmNode({self.name!r}, power={self.power_state()})"

    # -- what Kubelet reads
    def now(self) -> float:
        return self._clock()

    def view(self) -> NodeView:
        with self._lock:
            return node_view(self._rec, Faults(), self.timing, self._clock())

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        return self._listeners.subscribe(listener)

    # -- watching
    def read(self) -> Observation:
        """Look at the VM now: its pid, and the marker in this boot's console (the log restarts per boot)."""
        pid = self.vm.pid()
        return Observation(pid, pid is not None and self._marker in self.vm.serial_text())

    def poll(self) -> bool:
        """Read the VM and update the record; True (and subscribers woken) when something changed."""
        seen = self.read()
        self._collect_orphans(seen.pid)
        with self._lock:
            before = self._rec
            self._rec = observe(self._rec, self._pid, seen, self._clock())
            self._pid = seen.pid
            changed = self._rec != before
        if changed:
            log.info("VM %s: %s", self.name, "guest up, kubelet running" if self._rec.on else "kubelet stopped")
            self._listeners.notify()
        return changed

    def _collect_orphans(self, pid: int | None) -> None:
        """Reap what this VM's power changes leave re-parented to the lab (see procs.reap): qemu's own
        daemonizing process (the session leader of a new qemu), an exited qemu, the soft-off helper."""
        if pid != self._pid:
            if self._pid is not None:
                self._orphans.add(self._pid)
            session = procs.session_of(pid) if pid is not None else None
            if session not in (None, pid, os.getpid()):
                self._orphans.add(session)
        helper = self.vm.spec.state_dir / SOFT_OFF_PID_FILE
        helper_pid = procs.read_pid(helper)
        if helper_pid is not None:
            helper.unlink(missing_ok=True)
            self._orphans.add(helper_pid)
        self._orphans = {p for p in self._orphans if not procs.reap(p)}

    # -- power and fault knobs, as the lab's glance and FaultSync see them
    def power_state(self) -> str:
        return "on" if self.vm.is_running() else "off"

    @property
    def faults(self) -> Faults:
        """The knobs that hold: `never_boots` is the image's hang knob (from the next power-on)."""
        return Faults(never_boots=self.vm.spec.hang)

    def set_faults(self, **changes: object) -> Faults:
        """Apply the knobs a VM has (never_boots -> hang); say which ones a VM cannot honour."""
        known = {f.name for f in dataclasses.fields(Faults)}
        unknown = sorted(set(changes) - known)
        if unknown:
            raise TypeError(f"machine {self.name}: unknown fault knob(s) {unknown}; known: {sorted(known)}")
        healthy = Faults()
        ignored = sorted(k for k, v in changes.items() if k not in VM_KNOBS and v != getattr(healthy, k))
        if ignored:
            log.warning("VM %s: fault knob(s) %s exist only on simulated machines; a VM honours %s",
                        self.name, ignored, list(VM_KNOBS))
        if "never_boots" in changes:
            self.vm.set_hang(bool(changes["never_boots"]))
        return self.faults
