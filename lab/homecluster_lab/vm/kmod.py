"""Which kernel modules the guest must load, in which order (pure; reads modules.dep text).

Debian's cloud kernel builds virtio-net as a module with a chain of dependencies
(virtio_ring, virtio, virtio_pci_*_dev, virtio_pci, failover, net_failover, virtio_net). Busybox's
insmod does not resolve dependencies, so the builder bakes the order into the image.
"""
from __future__ import annotations

import re

# What a qemu guest with `-nic user,model=virtio-net-pci` needs to see eth0.
NETWORK_MODULES = ("virtio_pci", "virtio_net")

_SUFFIX = re.compile(r"\.ko(\.(xz|zst|gz))?$")


def module_name(path: str) -> str:
    """kernel/drivers/net/virtio_net.ko -> virtio_net (dashes and underscores are the same to the kernel)."""
    base = path.rsplit("/", 1)[-1]
    return _SUFFIX.sub("", base).replace("-", "_")


def parse_modules_dep(text: str) -> dict[str, tuple[str, list[str]]]:
    """modules.dep as {name: (path, [dependency paths])}."""
    table: dict[str, tuple[str, list[str]]] = {}
    for line in text.splitlines():
        path, sep, deps = line.partition(":")
        if not sep:
            continue
        table[module_name(path.strip())] = (path.strip(), deps.split())
    return table


def load_order(modules_dep: str, wanted: tuple[str, ...] = NETWORK_MODULES) -> list[str]:
    """The module paths to insmod, dependencies first, each once.

    A wanted module that is missing from modules.dep is an error: it may be built into the
    kernel, but then the guest needs no insmod and the caller should drop it from `wanted`.
    """
    table = parse_modules_dep(modules_dep)
    order: list[str] = []
    visiting: set[str] = set()

    def visit(name: str) -> None:
        if name not in table:
            raise ValueError(f"kernel module {name!r} is not in modules.dep; is it built in or misspelt?")
        path, deps = table[name]
        if path in order or name in visiting:
            return
        visiting.add(name)
        for dep in deps:
            visit(module_name(dep))
        order.append(path)

    for name in wanted:
        visit(name)
    return order
