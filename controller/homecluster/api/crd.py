"""The three CustomResourceDefinitions: names, printer columns and the schemas generated from the models.

Pure data: ``all_crds()`` returns plain dicts; ``homecluster.api.generate`` writes them as YAML.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from homecluster import API_GROUP, API_VERSION
from homecluster.api.group import GroupSpec, GroupStatus
from homecluster.api.node import NodeSpec, NodeStatus
from homecluster.api.nodeclaim import NodeClaimSpec, NodeClaimStatus
from homecluster.api.schema import model_schema
from homecluster.names import CLAIM_KIND, CLAIM_PLURAL, GROUP_KIND, GROUP_PLURAL, SLOT_KIND, SLOT_PLURAL

CATEGORY = "homecluster"
AGE = {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}


def _col(name: str, type_: str, path: str, description: str) -> dict[str, str]:
    return {"name": name, "type": type_, "jsonPath": path, "description": description}


@dataclass(frozen=True)
class KindInfo:
    """Everything a CRD needs besides the schema."""

    kind: str
    plural: str
    short_names: tuple[str, ...]
    spec: type[BaseModel]
    status: type[BaseModel]
    description: str
    columns: tuple[dict[str, str], ...]

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def crd_name(self) -> str:
        return f"{self.plural}.{API_GROUP}"

    @property
    def file_name(self) -> str:
        return f"{API_GROUP}_{self.plural}.yaml"


KINDS: tuple[KindInfo, ...] = (
    KindInfo(
        kind=SLOT_KIND, plural=SLOT_PLURAL, short_names=("slot", "slots"), spec=NodeSpec, status=NodeStatus,
        description="A slot: the configuration of one machine. Git writes its spec; the operator writes its "
        "status. A machine is wanted exactly when a live NodeClaim names its slot.",
        columns=(
            _col("Group", "string", ".spec.groupRef", "The pool this slot belongs to"),
            _col("Power", "string", ".status.powerState", "Observed power: on when the corev1 Node is Ready"),
            _col("Phase", "string", ".status.phase", "Derived from the live claim, the power and the node"),
            _col("Claim", "string", ".status.claim", "The slot's live claim"),
            _col("Attempt", "integer", ".status.attempt", "The live claim's attempt"),
            AGE,
        ),
    ),
    KindInfo(
        kind=CLAIM_KIND, plural=CLAIM_PLURAL, short_names=("claim", "claims"), spec=NodeClaimSpec,
        status=NodeClaimStatus,
        description="One request for one machine: pending, booting, ready, then completed or failed.",
        columns=(
            _col("Slot", "string", ".spec.slotRef", "The slot this claim asks to be on"),
            _col("Phase", "string", ".status.phase", "pending, booting, ready, completed or failed"),
            _col("Attempt", "integer", ".status.attempt", "The attempt, seeded from the slot's last claim"),
            _col("Reason", "string", ".status.reason", "Why the claim failed or completed"),
            _col("Deadline", "string", ".spec.deadlineAt", "The boot budget (a timestamp); cleared when ready"),
            AGE,
        ),
    ),
    KindInfo(
        kind=GROUP_KIND, plural=GROUP_PLURAL, short_names=("pool", "pools"), spec=GroupSpec, status=GroupStatus,
        description="A pool of slots: size bounds, boot budget, and what a new node of the pool promises.",
        columns=(
            _col("Min", "integer", ".spec.minSize", "The autoscaler never goes below it"),
            _col("Max", "integer", ".spec.maxSize", "At most this many live claims"),
            _col("Provision", "string", ".spec.maxNodeProvisionTime",
                 "The autoscaler's scale-up budget; the claim budget is the larger of it and the boot floor"),
            AGE,
        ),
    ),
)


def root_schema(info: KindInfo) -> dict[str, Any]:
    """The openAPIV3Schema of a kind: the envelope plus the generated spec and status."""
    spec = model_schema(info.spec)
    status = model_schema(info.status)
    return {
        "description": info.description,
        "type": "object",
        "properties": {
            "apiVersion": {"description": "The versioned schema of this object: " f"{API_GROUP}/{API_VERSION}.",
                           "type": "string"},
            "kind": {"description": f"The kind of this object: {info.kind}.", "type": "string"},
            "metadata": {"type": "object"},
            "spec": spec,
            "status": status,
        },
        "required": ["spec"],
    }


def crd(info: KindInfo) -> dict[str, Any]:
    """The apiextensions.k8s.io/v1 CustomResourceDefinition of one kind."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": info.crd_name},
        "spec": {
            "group": API_GROUP,
            "names": {
                "kind": info.kind,
                "listKind": f"{info.kind}List",
                "plural": info.plural,
                "singular": info.singular,
                "shortNames": list(info.short_names),
                "categories": [CATEGORY],
            },
            "scope": "Cluster",
            "versions": [{
                "name": API_VERSION,
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "additionalPrinterColumns": [dict(c) for c in info.columns],
                "schema": {"openAPIV3Schema": root_schema(info)},
            }],
        },
    }


def all_crds() -> dict[str, dict[str, Any]]:
    """kind -> CRD, for the generator and for the lab's API server."""
    return {info.kind: crd(info) for info in KINDS}


def kind_info(kind: str) -> KindInfo:
    for info in KINDS:
        if info.kind == kind:
            return info
    raise KeyError(f"no kind {kind!r} in {API_GROUP}: expected one of {', '.join(i.kind for i in KINDS)}")
