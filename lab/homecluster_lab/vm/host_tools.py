"""The host programs the lab's VMs need, each with the Debian package that provides it.

Checked up front, so a machine without one of them gets one message naming every missing program
and its package, instead of a FileNotFoundError from the middle of a build or a boot.
scripts/system-deps.sh installs all of these packages (tests/install/test_system_deps.py keeps it so,
and checks each package below really provides its program).
"""
from __future__ import annotations

import shutil
from typing import Callable, Mapping

# The image builder (image.py, apt.py, elf.py, assemble.py): download, unpack, index the kernel
# modules, check the ELF loaders, pack the initramfs, make root's SSH key.
BUILDER_TOOLS: Mapping[str, str] = {
    "apt-cache": "apt",
    "apt-get": "apt",
    "dpkg-deb": "dpkg",
    "depmod": "kmod",
    "readelf": "binutils",
    "cpio": "cpio",
    "gzip": "gzip",
    "ssh-keygen": "openssh-client",
}

# Running the VMs and their power fronts (qemu.py, ipmi_front.py, chassis.py, ssh.py).
RUN_TOOLS: Mapping[str, str] = {
    "qemu-system-x86_64": "qemu-system-x86",
    "ipmi_sim": "openipmi",
    "ssh": "openssh-client",
    "timeout": "coreutils",
}


class MissingTools(RuntimeError):
    """Host programs are missing; the message names each one, its Debian package and the fix."""


def missing(tools: Mapping[str, str], which: Callable[[str], str | None] = shutil.which) -> list[tuple[str, str]]:
    """(program, package) of each program in `tools` that is not on PATH."""
    return [(program, package) for program, package in tools.items() if which(program) is None]


def describe(absent: list[tuple[str, str]], who: str) -> str:
    """One sentence naming every missing program with its package, and the command that installs them."""
    names = ", ".join(f"{program} (Debian package {package})" for program, package in absent)
    packages = " ".join(sorted({package for _, package in absent}))
    return f"{who} needs {names}; run scripts/system-deps.sh or `apt-get install {packages}`"


def require(tools: Mapping[str, str], who: str) -> None:
    """Raise MissingTools naming every program of `tools` that is not installed."""
    absent = missing(tools)
    if absent:
        raise MissingTools(describe(absent, who))
