"""The YAML files the lab reads again and again (CustomResourceDefinitions: ours at every API server start,
Flux's at every GitOps lab), parsed once per process.

Every lab API server starts by reading config/crd, and the suite starts hundreds of them: parsed each time
with PyYAML's pure-Python loader that was 70 ms of CPU a start. Here a file is parsed once (with libyaml's
loader where PyYAML has it) and kept, keyed by its path, size and modification time, so an edited file is read
again; each caller gets its own deep copy, free to change.
"""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_PARSED: dict[tuple[str, int, int], list[Any]] = {}


def documents(path: Path) -> list[Any]:
    """Every YAML document of `path`, in order (empty ones as None), a copy the caller may change."""
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    parsed = _PARSED.get(key)
    if parsed is None:
        parsed = list(yaml.load_all(path.read_text(), Loader=_LOADER))  # noqa: S506 - a safe loader
        _PARSED[key] = parsed
    return copy.deepcopy(parsed)


def custom_resource_definitions(paths: list[Path]) -> list[dict[str, Any]]:
    """The CustomResourceDefinitions of `paths`, in the order given (other documents left out)."""
    return [d for p in paths for d in documents(p)
            if isinstance(d, dict) and d.get("kind") == "CustomResourceDefinition"]
