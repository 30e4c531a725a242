"""The running version, read from the installed distribution's metadata (the `--version` flag, the build_info metric)."""
from __future__ import annotations


def version() -> str:
    """The installed distribution's version (its metadata), so a wheel and its code never disagree."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("homecluster")
    except PackageNotFoundError:
        return "unknown (not installed as a distribution)"
