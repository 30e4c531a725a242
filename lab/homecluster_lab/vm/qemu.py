"""One lab VM: a daemonized qemu process whose existence is the machine's power state.

Everything about a VM lives in its state folder so that other processes (ipmi_sim's
chassis_control program, a Wake-on-LAN listener) can power it on and off too:

  spec.json   how to start it (VmSpec)      qemu.pid   written by qemu once it runs
  serial.log  the guest's serial console    qemu.err   qemu's own error output at start

qemu runs with `-accel tcg` (KVM hangs on the lab's hosts) and `-no-reboot`, so `poweroff -f`
in the guest, a kernel panic or SIGKILL all end the process: a real power-off.
"""
from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from homecluster_lab import ports

from . import procs, ssh
from .guest_init import BOOT_MARKER, HANG_MARKER
from .image import ImagePaths

QEMU = "qemu-system-x86_64"
_SLOT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")
_MAC = re.compile(r"^([0-9a-f]{2}:){5}[0-9a-f]{2}$")


PORT_TAKEN = "Could not set up host forwarding rule"  # qemu's words when its SSH port is taken


class VmError(RuntimeError):
    """qemu could not start the VM; the message names the VM and carries qemu's own words."""


def normalize_mac(mac: str) -> str:
    """aa-bb-cc-dd-ee-ff or AA:BB:... -> aa:bb:cc:dd:ee:ff; ValueError naming the bad value otherwise."""
    text = mac.strip().lower().replace("-", ":")
    if not _MAC.match(text):
        raise ValueError(f"VM mac {mac!r} is not a MAC address; write it as 52:54:00:xx:xx:xx")
    return text


def mac_for(name: str) -> str:
    """A stable locally administered MAC (qemu's 52:54:00 prefix) derived from the slot name."""
    digest = hashlib.sha256(name.encode()).digest()
    return "52:54:00:" + ":".join(f"{b:02x}" for b in digest[:3])


@dataclass
class VmSpec:
    """How to start one VM. `hang` makes the guest stop before networking (a boot that never finishes)."""

    name: str
    state_dir: Path
    image: ImagePaths
    mac: str = ""
    ssh_port: int = 0
    memory_mb: int = 128
    hang: bool = False
    extra_append: str = ""
    qemu_binary: str = QEMU
    extra_args: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not _SLOT.match(self.name):
            raise ValueError(f"VM name {self.name!r}: use letters, digits, '.', '_' or '-' (it goes on the kernel command line)")
        self.state_dir = Path(self.state_dir)
        self.mac = normalize_mac(self.mac or mac_for(self.name))
        if not self.ssh_port:
            # qemu's hostfwd needs a number (no port 0), and binds it anew at every power-on: a program's port
            # (homecluster_lab.ports), moved by Vm.start when another process took it meanwhile
            self.ssh_port = ports.program_port()

    @property
    def pid_file(self) -> Path:
        return self.state_dir / "qemu.pid"

    @property
    def serial_log(self) -> Path:
        return self.state_dir / "serial.log"

    @property
    def error_log(self) -> Path:
        return self.state_dir / "qemu.err"

    def kernel_cmdline(self) -> str:
        parts = ["console=ttyS0", "quiet", "panic=-1", f"homecluster.slot={self.name}"]
        if self.hang:
            parts.append("homecluster.hang=1")
        if self.extra_append:
            parts.append(self.extra_append)
        return " ".join(parts)

    def argv(self) -> list[str]:
        """The qemu command line (pure)."""
        return [
            self.qemu_binary, "-accel", "tcg", "-m", str(self.memory_mb),
            "-name", f"homecluster-{self.name}",
            "-display", "none", "-vga", "none", "-monitor", "none",
            "-serial", f"file:{self.serial_log}",
            "-kernel", str(self.image.kernel), "-initrd", str(self.image.initramfs),
            "-append", self.kernel_cmdline(),
            "-no-reboot",
            "-nic", f"user,model=virtio-net-pci,mac={self.mac},hostfwd=tcp:127.0.0.1:{self.ssh_port}-:22",
            "-pidfile", str(self.pid_file), "-daemonize",
            *self.extra_args,
        ]

    def to_json(self) -> str:
        data = asdict(self)
        data["state_dir"] = str(self.state_dir)
        data["image"] = {k: str(v) for k, v in asdict(self.image).items()}
        return json.dumps(data, indent=2)

    @classmethod
    def from_json(cls, text: str) -> "VmSpec":
        data = json.loads(text)
        data["image"] = ImagePaths(**{k: Path(v) for k, v in data["image"].items()})
        return cls(**data)


class Vm:
    """Power control and observation of one VM, by its state folder (safe to use from any process)."""

    def __init__(self, spec: VmSpec, save: bool = True) -> None:
        self.spec = spec
        self._last_pid: int | None = None  # see pid()
        if save:
            self.save()

    def save(self) -> None:
        """Write spec.json, which other processes (ipmi_sim's chassis program) start the VM from."""
        self.spec.state_dir.mkdir(parents=True, exist_ok=True)
        tmp = self.spec.state_dir / "spec.json.tmp"
        tmp.write_text(self.spec.to_json())
        tmp.replace(self.spec.state_dir / "spec.json")

    @classmethod
    def load(cls, state_dir: Path) -> "Vm":
        """The VM whose spec.json is in state_dir (written when a Vm was made for it)."""
        path = Path(state_dir) / "spec.json"
        try:
            return cls(VmSpec.from_json(path.read_text()), save=False)
        except FileNotFoundError:
            raise VmError(f"no VM spec at {path}: create the VM with homecluster_lab.vm.qemu.Vm first") from None

    def set_hang(self, hang: bool) -> None:
        """The fault knob: from the next power-on, the guest's boot stops before networking (or not)."""
        self.spec.hang = hang
        self.save()

    @property
    def name(self) -> str:
        return self.spec.name

    def pid(self) -> int | None:
        """The qemu pid if the VM is powered on, else None.

        qemu removes its pid file as it exits, before the process is gone: the last pid read is
        remembered, so "off" means the process itself has ended, not only its pid file.
        """
        pid = procs.read_pid(self.spec.pid_file)
        if pid is not None:
            self._last_pid = pid
        else:
            pid = self._last_pid
        if pid is None or not procs.alive(pid):
            return None
        # A recycled pid belongs to someone else: check it is our qemu.
        if str(self.spec.pid_file) not in procs.cmdline(pid):
            return None
        return pid

    def is_running(self) -> bool:
        return self.pid() is not None

    def ssh_port(self) -> int:
        """The guest's SSH port as spec.json has it now: a power-on in another process (the chassis program)
        moves it when another process took it while the VM was off (`start`)."""
        try:
            return Vm.load(self.spec.state_dir).spec.ssh_port
        except VmError:
            return self.spec.ssh_port

    def start(self) -> bool:
        """Power on. False if it was already on. Raises VmError with qemu's message if qemu refuses."""
        if self.is_running():
            return False
        if shutil.which(self.spec.qemu_binary) is None:
            raise VmError(f"VM {self.name}: {self.spec.qemu_binary} is not installed (Debian package qemu-system-x86)")
        for attempt in range(1, ports.PORT_TRIES + 1):
            self.spec.pid_file.unlink(missing_ok=True)
            self.spec.serial_log.write_text("")  # a new boot, a new console
            with open(self.spec.error_log, "w") as err:
                proc = subprocess.run(self.spec.argv(), stdin=subprocess.DEVNULL, stdout=err, stderr=err,
                                      start_new_session=True, timeout=60)
            if proc.returncode == 0:
                return True
            words = self.spec.error_log.read_text().strip()[-600:]
            if PORT_TAKEN not in words or attempt == ports.PORT_TRIES:
                raise VmError(f"VM {self.name}: qemu exited {proc.returncode}: {words}")
            # another process took the SSH port while the VM was off: a new one, saved for every reader of
            # spec.json (the lab's VmMachine.ssh, the chassis program)
            self.spec.ssh_port = ports.program_port()
            self.save()
        raise AssertionError("unreachable")

    def kill(self, timeout: float = 5.0) -> bool:
        """Power off at once (SIGKILL, a pulled plug). False if it was already off."""
        pid = self.pid()
        if pid is None:
            return False
        if not procs.kill_and_wait(pid, timeout=timeout):
            raise VmError(f"VM {self.name}: qemu pid {pid} survived SIGKILL for {timeout}s")
        procs.reap(pid)  # a zombie re-parented to us (the lab is a subreaper) is collected now
        self.spec.pid_file.unlink(missing_ok=True)
        return True

    def serial_text(self) -> str:
        try:
            return self.spec.serial_log.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def _wait_for_line(self, needle: str, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while True:
            if needle in self.serial_text():
                return True
            if time.monotonic() >= deadline or not self.is_running():
                return needle in self.serial_text()
            time.sleep(0.05)

    def wait_for_marker(self, timeout: float) -> bool:
        """True once the guest printed `HOMECLUSTER-BOOTED slot=<name>` (sshd is up); False on timeout or power-off."""
        return self._wait_for_line(f"{BOOT_MARKER} slot={self.name}\n", timeout)

    def wait_for_hang(self, timeout: float) -> bool:
        """True once a guest started with hang=True reports that it stopped before networking."""
        return self._wait_for_line(f"{HANG_MARKER} slot={self.name}", timeout)

    def wait_for_ssh(self, timeout: float) -> bool:
        """True once root can run a command over SSH with the image's key."""
        return ssh.wait_until_answers(self.ssh_port(), self.spec.image.ssh_private_key, timeout)

    def ssh(self, command: str, timeout: float = 10) -> subprocess.CompletedProcess[str]:
        """Run a command in the guest as root (returncode, stdout, stderr)."""
        return ssh.run(self.ssh_port(), self.spec.image.ssh_private_key, command, timeout)

    def wait_for_power_off(self, timeout: float) -> bool:
        """True once the qemu process is gone."""
        deadline = time.monotonic() + timeout
        while self.is_running():
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)
        return True
