"""Where the lab and the tests find cluster-autoscaler binaries, and which release each one is.

cluster-autoscaler is not built here (its module is not served by the Go module proxy): a user builds it
by hand from the upstream source with the externalgrpc provider compiled in, or takes the binary out of the
official image (`/cluster-autoscaler`), and points the lab at it. Two places are searched, in this order:

- the variable HOMECLUSTER_CLUSTER_AUTOSCALER: a list of binaries separated by os.pathsep (`:`), each
  either `PATH` or `RELEASE=PATH` (e.g. `1.36.1=/opt/ca/cluster-autoscaler`);
- the cache folder ~/.cache/homecluster/cluster-autoscaler/<RELEASE>/cluster-autoscaler (one per release).

The binary has no --version flag, so the release is what the user says: the `RELEASE=` prefix, else the name
of the binary's folder when it reads as a release (`1.36.1`, `v1.35.2`), else the binary's own path.
Everything here is pure but for reading the environment and listing the cache folder.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

ENV = "HOMECLUSTER_CLUSTER_AUTOSCALER"
BINARY = "cluster-autoscaler"
RELEASE = re.compile(r"^v?(\d{1,3})\.(\d{1,3})(?:\.(\d{1,4}))?$")


@dataclass(frozen=True)
class Build:
    release: str  # "1.36.1", or the path when nothing names the release
    path: Path

    def sort_key(self) -> tuple[int, ...]:
        found = RELEASE.match(self.release)
        return tuple(int(p or 0) for p in found.groups()) if found else (0,)


def cache_folder() -> Path:
    return Path.home() / ".cache" / "homecluster" / BINARY


def release_of(path: Path) -> str:
    """The folder's name when it reads as a release (1.36.1 or v1.36.1, said without the v), else the path."""
    found = RELEASE.match(path.parent.name)
    return path.parent.name.lstrip("v") if found else str(path)


def parse(value: str) -> list[Build]:
    """HOMECLUSTER_CLUSTER_AUTOSCALER's entries (`PATH` or `RELEASE=PATH`), executable or not."""
    builds = []
    for entry in (e.strip() for e in value.split(os.pathsep)):
        if not entry:
            continue
        release, sep, path = entry.partition("=")
        if sep and RELEASE.match(release.strip()):
            builds.append(Build(release.strip().lstrip("v"), Path(path.strip()).expanduser()))
        else:
            builds.append(Build(release_of(Path(entry).expanduser()), Path(entry).expanduser()))
    return builds


def _runnable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def discover(environ: dict[str, str] | None = None, cache: Path | None = None) -> list[Build]:
    """Every runnable binary named by the variable, then every one in the cache folder, oldest release first;
    one per release (the variable's wins) and one per file."""
    environ = os.environ if environ is None else environ
    cache = cache_folder() if cache is None else cache
    named = [b for b in parse(environ.get(ENV, "")) if _runnable(b.path)]
    cached = [Build(release_of(p), p) for p in sorted(cache.glob(f"*/{BINARY}")) if _runnable(p)]
    kept: dict[str, Build] = {}
    seen: set[Path] = set()
    for build in named + cached:
        real = build.path.resolve()
        if build.release in kept or real in seen:
            continue
        kept[build.release] = build
        seen.add(real)
    return sorted(kept.values(), key=lambda b: (b.sort_key(), b.release))


def unusable(environ: dict[str, str] | None = None) -> list[str]:
    """The variable's entries that are no runnable file, each said with the fix."""
    environ = os.environ if environ is None else environ
    return [f"{ENV} names {b.path}, which is not an executable file" for b in parse(environ.get(ENV, ""))
            if not _runnable(b.path)]


def missing_reason() -> str:
    """Why a test that needs a real cluster-autoscaler skips: the variable and the folder to fill."""
    wrong = unusable()
    return (f"no cluster-autoscaler binary found: set {ENV} to its path (several separated by "
            f"{os.pathsep!r}, each optionally RELEASE=PATH) or put it at "
            f"{cache_folder()}/<release>/{BINARY} (built with the externalgrpc provider; docs/autoscaler.md)"
            + (f"; {'; '.join(wrong)}" if wrong else ""))


def choose(value: str) -> Build:
    """`homecluster lab --autoscaler VALUE`: a binary's PATH (or RELEASE=PATH), or `newest` (the newest found)."""
    if value == "newest":
        found = discover()
        if not found:
            raise ValueError(f"--autoscaler newest: {missing_reason()}")
        return found[-1]
    chosen = parse(value)
    if len(chosen) != 1 or not _runnable(chosen[0].path):
        raise ValueError(f"--autoscaler {value!r}: name one cluster-autoscaler binary (PATH or RELEASE=PATH, "
                         f"an executable file), or `newest` for the newest in {ENV} or {cache_folder()}")
    return chosen[0]
