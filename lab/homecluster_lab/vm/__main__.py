"""Try one lab VM by hand: `python -m homecluster_lab.vm NAME [--hang] [--password PW]`.

Builds (or reuses) the image, opens the VM's IPMI front, prints the commands that power it on,
reach it over SSH and power it off, and keeps everything up until Ctrl-C; then the VM and its BMC
are stopped. The IPMI password is read from --password or $HOMECLUSTER_VM_IPMI_PASSWORD and is
not printed.
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
from pathlib import Path

from .image import build_image, default_build_dir
from .machine import VmMachine
from .ssh import ssh_argv


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m homecluster_lab.vm", description=__doc__.splitlines()[0])
    parser.add_argument("name", help="the slot name the VM plays")
    parser.add_argument("--hang", action="store_true", help="boot stops before networking (fault knob)")
    parser.add_argument("--build-dir", type=Path, default=None)
    parser.add_argument("--state-dir", type=Path, default=None, help="default: a new temporary folder")
    parser.add_argument("--username", default="admin")
    parser.add_argument("--password", default=os.environ.get("HOMECLUSTER_VM_IPMI_PASSWORD", "lab-secret"))
    args = parser.parse_args(argv)

    image = build_image(args.build_dir or default_build_dir())
    state = args.state_dir or Path(tempfile.mkdtemp(prefix="homecluster-vm-"))
    machine = VmMachine(args.name, state, image, username=args.username, password=args.password, hang=args.hang)
    machine.start_fronts()
    host, port = machine.ipmi.address
    ipmi = f"ipmitool -I lanplus -C 3 -H {host} -p {port} -U {args.username} -P <password>"
    print(f"VM {machine.name} (MAC {machine.mac}), state in {machine.vm.spec.state_dir}")
    print(f"  power on:   {ipmi} chassis power on")
    print(f"  console:    tail -f {machine.vm.spec.serial_log}")
    print(f"  ssh:        {' '.join(ssh_argv(machine.ssh.port, machine.ssh.private_key, 'uname -a'))}")
    print(f"  power off:  {ipmi} chassis power off   (or ssh ... 'poweroff -f')")
    print("Ctrl-C stops the VM and its BMC.")
    try:
        while True:
            signal.pause()
    except KeyboardInterrupt:
        pass
    finally:
        machine.close()
    return 0


def _interrupt(signum, frame):
    raise KeyboardInterrupt


if __name__ == "__main__":
    signal.signal(signal.SIGINT, _interrupt)
    signal.signal(signal.SIGTERM, _interrupt)
    sys.exit(main())
