"""Helpers shared by the install tests (imported by name: `conftest` is ambiguous across test folders)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
CONFIG = REPO / "config"

_RENDERED: dict[Path, list[dict[str, Any]]] = {}


def render(directory: Path) -> list[dict[str, Any]]:
    """`kubectl kustomize directory`, parsed; cached per directory for the session."""
    from rbac_audit import render as _render
    if directory not in _RENDERED:
        _RENDERED[directory] = _render(directory)
    return _RENDERED[directory]


def find(objects: list[dict[str, Any]], kind: str, name: str | None = None) -> list[dict[str, Any]]:
    return [o for o in objects if o.get("kind") == kind and (name is None or o["metadata"]["name"] == name)]



def kubectl_env(api: Any, home: Path) -> dict[str, str]:
    home.mkdir(parents=True, exist_ok=True)
    return {**os.environ, "HOME": str(home), "KUBECONFIG": str(api.kubeconfig_path)}


def dump(objects: list[dict[str, Any]]) -> str:
    return yaml.safe_dump_all(objects, sort_keys=False)
