"""ipmi_sim's chassis_control program for a lab VM: the BMC's power button is the qemu process.

ipmi_sim runs `<configured command> get power` and expects `power:1` or `power:0` on stdout,
and `<configured command> set power "1"` (or reset, shutdown, boot, identify) expecting empty output
and exit status 0; a soft-off (`ipmitool chassis power soft`) arrives as `set shutdown 1`. Errors
go to stdout with a non-zero status (ipmi_sim logs them). The configured command is
`python -m homecluster_lab.vm.chassis <vm state folder>`.
"""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from . import ssh
from .qemu import Vm, VmError

BOOT_FILE = "boot-device"
LOG_FILE = "chassis.log"
SOFT_OFF_PID_FILE = "soft-off.pid"


def _pairs(args: list[str]) -> list[tuple[str, str]]:
    if len(args) % 2:
        raise ValueError(f"set wants parameter/value pairs, got {args}")
    return [(args[i], args[i + 1].strip('"')) for i in range(0, len(args), 2)]


def get(vm: Vm, parms: list[str]) -> list[str]:
    """Answer lines for `get`: power from the live qemu process, boot from the stored choice."""
    lines = []
    for parm in parms:
        if parm == "power":
            lines.append(f"power:{1 if vm.is_running() else 0}")
        elif parm == "boot":
            path = vm.spec.state_dir / BOOT_FILE
            lines.append(f"boot:{path.read_text().strip() if path.exists() else 'default'}")
        else:
            raise ValueError(f"chassis get: unsupported parameter {parm!r} (supported: power, boot)")
    return lines


def guest_poweroff(vm: Vm) -> None:
    """A soft-off (ACPI power button): ask the guest to `poweroff -f` over its SSH, in the background.

    ipmi_sim waits for this program, so the SSH session runs detached (bounded by `timeout`). A guest
    that is not up (a hung boot) does not answer and stays on, as a real OS that ignores the button
    would; the client then forces the power off.
    """
    argv = ["timeout", "15", *ssh.ssh_argv(vm.spec.ssh_port, vm.spec.image.ssh_private_key, "poweroff -f")]
    helper = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    # The helper outlives this program and is re-parented; the lab collects it (node_watch) by this file.
    (vm.spec.state_dir / SOFT_OFF_PID_FILE).write_text(f"{helper.pid}\n")


def set_(vm: Vm, args: list[str]) -> None:
    """Apply `set` pairs: power 1 starts qemu, power 0 kills it, reset 1 kills and starts it,
    shutdown 1 (a soft-off) asks the guest to power itself off."""
    for parm, value in _pairs(args):
        if parm == "power":
            if value == "1":
                vm.start()
            elif value == "0":
                vm.kill()
            else:
                raise ValueError(f"chassis set power: value {value!r} is not 0 or 1")
        elif parm == "reset":
            if value == "1":
                vm.kill()
                vm.start()
        elif parm == "shutdown":
            if value == "1" and vm.is_running():
                guest_poweroff(vm)
        elif parm == "boot":
            (vm.spec.state_dir / BOOT_FILE).write_text(value + "\n")
        elif parm == "identify":
            pass  # no LED to blink; accept as a real BMC would
        else:
            raise ValueError(f"chassis set: unsupported parameter {parm!r} "
                             f"(supported: power, reset, shutdown, boot, identify)")


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print("usage: python -m homecluster_lab.vm.chassis VM_STATE_DIR get|set|check PARM [VALUE] ...")
        return 2
    state_dir, op, rest = Path(argv[0]), argv[1], argv[2:]
    try:
        vm = Vm.load(state_dir)
        with open(state_dir / LOG_FILE, "a") as log:
            log.write(f"{time.strftime('%H:%M:%S')} {op} {' '.join(rest)}\n")
        if op == "get":
            print("\n".join(get(vm, rest)))
        elif op == "set":
            set_(vm, rest)
        elif op == "check":
            return 1  # nothing to validate ahead of a set; ipmi_sim treats non-zero as "not supported"
        else:
            raise ValueError(f"unknown operation {op!r} (get, set, check)")
    except (ValueError, VmError, OSError) as exc:
        print(f"chassis control for {state_dir}: {exc}")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
