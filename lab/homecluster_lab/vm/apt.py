"""Thin wrappers around apt-cache, apt-get download and dpkg-deb: the builder's only I/O with Debian.

Nothing is installed on the host: packages are downloaded into a cache folder and unpacked into
scratch folders.
"""
from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from .debian import PackageInfo, parse_show


class AptError(RuntimeError):
    """An apt or dpkg-deb command failed; the message names the package and what to do."""


def _run(argv: list[str], what: str, cwd: Path | None = None) -> str:
    if shutil.which(argv[0]) is None:
        raise AptError(f"{what}: `{argv[0]}` is not installed; the VM image builder needs a Debian host with apt")
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise AptError(f"{what}: `{' '.join(argv)}` exited {proc.returncode}: {proc.stderr.strip()[-800:]}")
    return proc.stdout


def show(names: list[str]) -> dict[str, PackageInfo]:
    """The candidate version and dependencies of each named package, in one apt-cache call."""
    out = _run(["apt-cache", "show", "--no-all-versions", *names], f"looking up packages {names}")
    found = parse_show(out)
    missing = [n for n in names if n not in found]
    if missing:
        raise AptError(f"apt knows no candidate for {missing}; run `apt-get update` and check the Debian sources")
    return found


def download(info: PackageInfo, cache_dir: Path) -> Path:
    """The .deb of exactly this version, from the cache folder or fetched into it."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    target = cache_dir / info.deb_filename
    if target.exists():
        return target
    with tempfile.TemporaryDirectory(dir=cache_dir, prefix=".download-") as tmp:
        _run(["apt-get", "download", "-q", f"{info.name}={info.version}"],
             f"downloading {info.name} {info.version}", cwd=Path(tmp))
        fetched = Path(tmp) / info.deb_filename
        if not fetched.exists():
            got = sorted(p.name for p in Path(tmp).iterdir())
            raise AptError(f"downloading {info.name} {info.version}: expected {info.deb_filename}, got {got}")
        fetched.replace(target)
    return target


def extract(deb: Path, dest: Path) -> Path:
    """Unpack a .deb's files (not its scripts) into `dest` with dpkg-deb -x."""
    dest.mkdir(parents=True, exist_ok=True)
    _run(["dpkg-deb", "-x", str(deb), str(dest)], f"unpacking {deb.name}")
    return dest
