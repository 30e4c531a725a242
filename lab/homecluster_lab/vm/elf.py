"""Which shared libraries a guest binary needs, found in the unpacked Debian packages.

`ldd` would answer from the host's libraries; the guest gets the files of the packages we
downloaded, so we read DT_NEEDED with readelf and look the names up in the unpacked trees.
"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

_NEEDED = re.compile(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]")
_INTERP = re.compile(r"\[Requesting program interpreter: ([^\]]+)\]")
LIBRARY_DIRS = ("lib/x86_64-linux-gnu", "usr/lib/x86_64-linux-gnu", "lib64", "lib", "usr/lib")


def parse_needed(readelf_dynamic: str) -> list[str]:
    """DT_NEEDED names from `readelf -d` output."""
    return _NEEDED.findall(readelf_dynamic)


def parse_interpreter(readelf_headers: str) -> str | None:
    """The program interpreter (e.g. /lib64/ld-linux-x86-64.so.2) from `readelf -l` output."""
    match = _INTERP.search(readelf_headers)
    return match.group(1) if match else None


def _readelf(flag: str, path: Path) -> str:
    proc = subprocess.run(["readelf", flag, "-W", str(path)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"readelf {flag} {path}: {proc.stderr.strip()}")
    return proc.stdout


def find_library(soname: str, roots: list[Path]) -> Path | None:
    """The first file named `soname` in the library folders of the unpacked package trees."""
    for root in roots:
        for sub in LIBRARY_DIRS:
            candidate = root / sub / soname
            if candidate.exists():
                return candidate
    return None


def library_closure(binaries: list[Path], roots: list[Path]) -> dict[str, Path]:
    """{guest path: host file} for every library (and the dynamic loader) the binaries need.

    Raises FileNotFoundError naming the library and the binary that wants it when a name is not
    in any unpacked package: add the package that ships it to the builder's list.
    """
    wanted: dict[str, Path] = {}
    todo = [(b, b) for b in binaries]
    seen: set[str] = set()
    for binary in binaries:
        interp = parse_interpreter(_readelf("-l", binary))
        if interp:
            found = find_library(Path(interp).name, roots)
            if not found:
                raise FileNotFoundError(f"{binary.name} wants the loader {interp}, which no unpacked package ships")
            wanted[interp] = found
    while todo:
        path, origin = todo.pop()
        for soname in parse_needed(_readelf("-d", path)):
            if soname in seen:
                continue
            seen.add(soname)
            found = find_library(soname, roots)
            if not found:
                raise FileNotFoundError(
                    f"{origin.name} needs {soname}, which none of the unpacked packages ships; "
                    "add its Debian package to the VM image builder"
                )
            wanted[f"/lib/x86_64-linux-gnu/{soname}"] = found
            todo.append((found, origin))
    return wanted
