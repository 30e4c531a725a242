"""The lab's pool as files of a Git repository: what a person keeps in Git for Flux or Argo CD to apply.

pool/kustomization.yaml lists pool/group.yaml and one pool/slots/<slot>.yaml per slot. The slots name
their credentials' Secrets by reference; the Secrets themselves are not in Git (a real repository would
hold them encrypted, with SOPS or sealed-secrets, or leave them to an external secret store): the lab
creates them as that store would.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

FOLDER = "pool"


def slot_file(slot: str) -> str:
    return f"{FOLDER}/slots/{slot}.yaml"


GROUP_FILE = f"{FOLDER}/group.yaml"
KUSTOMIZATION_FILE = f"{FOLDER}/kustomization.yaml"


def dump(obj: Mapping[str, Any]) -> str:
    return yaml.safe_dump(dict(obj), sort_keys=False)


def kustomization(slots: list[str]) -> str:
    resources = ["group.yaml", *(f"slots/{s}.yaml" for s in slots)]
    return dump({"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "resources": resources})


def files(group: Mapping[str, Any], slots: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """The repository's files for one Group and its slots (name -> slot object)."""
    out = {KUSTOMIZATION_FILE: kustomization(sorted(slots)), GROUP_FILE: dump(group)}
    out.update({slot_file(name): dump(obj) for name, obj in slots.items()})
    return out
