"""Put the guest's root tree together from unpacked packages and pack it as a gzip'd newc cpio.

Input: folders unpacked with dpkg-deb -x (kernel, busybox-static, dropbear-bin, libraries).
Output: a root folder holding only what the guest runs, then initramfs.gz.
"""
from __future__ import annotations

import lzma
import os
import shutil
import subprocess
from pathlib import Path

from . import elf, guest_init


def _inside(root: Path, path: Path) -> Path:
    """Resolve symlinks of an unpacked tree within the tree (absolute links point into `root`)."""
    for _ in range(40):
        if not path.is_symlink():
            return path
        target = os.readlink(path)
        path = (root / target.lstrip("/")) if target.startswith("/") else (path.parent / target)
    raise RuntimeError(f"{path}: too many levels of symbolic links in the unpacked package")


def _copy(src: Path, dest: Path, mode: int = 0o755) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dest)
    dest.chmod(mode)


def _write(dest: Path, text: str, mode: int = 0o644) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(text)
    dest.chmod(mode)


def _guest(root: Path, guest_path: str) -> Path:
    return root / guest_path.lstrip("/")


def install_busybox(root: Path, busybox_tree: Path) -> None:
    """busybox at /bin/busybox plus a symlink per applet (sh, ip, insmod, poweroff, ...)."""
    binary = _inside(busybox_tree, busybox_tree / "bin/busybox")
    _copy(binary, root / "bin/busybox")
    listing = subprocess.run([str(root / "bin/busybox"), "--list-full"], capture_output=True, text=True, check=True)
    for applet in listing.stdout.split():
        link = root / applet
        if link.exists() or link.is_symlink():
            continue
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to("/bin/busybox")


def install_dropbear(root: Path, dropbear_tree: Path, library_trees: list[Path]) -> None:
    """dropbear and dropbearkey with every shared library they need (from the unpacked packages)."""
    binaries = {"/usr/sbin/dropbear": dropbear_tree / "usr/sbin/dropbear",
                "/usr/bin/dropbearkey": dropbear_tree / "usr/bin/dropbearkey"}
    for guest_path, src in binaries.items():
        _copy(src, _guest(root, guest_path))
    trees = [dropbear_tree, *library_trees]
    for guest_path, src in elf.library_closure(list(binaries.values()), trees).items():
        tree = next((t for t in trees if src.is_relative_to(t)), trees[0])
        _copy(_inside(tree, src), _guest(root, guest_path))


def install_modules(root: Path, kernel_tree: Path, release: str, order: list[str]) -> list[str]:
    """Copy the modules in load order; decompress .ko.xz (busybox insmod wants plain .ko). Returns guest paths."""
    installed = []
    base = kernel_tree / "lib/modules" / release
    for rel in order:
        src = base / rel
        if rel.endswith(".ko.xz"):
            rel = rel[: -len(".xz")]
            dest = root / "lib/modules" / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(lzma.decompress(src.read_bytes()))
        elif rel.endswith(".ko"):
            _copy(src, root / "lib/modules" / rel, 0o644)
        else:
            raise ValueError(f"kernel module {rel}: only .ko and .ko.xz are supported by the VM image builder")
        installed.append(rel)
    return installed


def install_base(root: Path, public_key: str, modules: list[str]) -> None:
    """/init, /etc files, root's authorized_keys, the module list, and empty mount points."""
    for folder in ("proc", "sys", "dev", "tmp", "run", "etc/dropbear", "etc/homecluster", "var/log"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    _write(root / "init", guest_init.INIT_SCRIPT, 0o755)
    for guest_path, text in guest_init.GUEST_FILES.items():
        _write(_guest(root, guest_path), text)
    _write(_guest(root, guest_init.MODULE_LIST), "".join(m + "\n" for m in modules))
    ssh_dir = root / "root/.ssh"
    ssh_dir.mkdir(parents=True, exist_ok=True)
    (root / "root").chmod(0o700)
    ssh_dir.chmod(0o700)
    _write(ssh_dir / "authorized_keys", public_key.strip() + "\n", 0o600)


def pack(root: Path, dest: Path) -> None:
    """root -> dest as `cpio -H newc` (owner root, sorted names) compressed with gzip, written atomically."""
    names = sorted(
        str(p.relative_to(root)) for p in root.rglob("*")
    )
    tmp = dest.with_name(dest.name + ".tmp")
    with open(tmp, "wb") as out:
        cpio = subprocess.Popen(["cpio", "-o", "-H", "newc", "-R", "0:0", "--quiet"], cwd=root,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        gzip = subprocess.Popen(["gzip", "-6", "-n"], stdin=cpio.stdout, stdout=out)
        assert cpio.stdin is not None and cpio.stdout is not None
        cpio.stdout.close()
        cpio.stdin.write(("\n".join(names) + "\n").encode())
        cpio.stdin.close()
        cpio_err = cpio.stderr.read().decode() if cpio.stderr else ""
        if cpio.wait() != 0 or gzip.wait() != 0:
            raise RuntimeError(f"packing {root} into {dest} failed: {cpio_err.strip()}")
    tmp.replace(dest)
