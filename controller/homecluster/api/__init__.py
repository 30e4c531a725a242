"""The v2alpha1 API (infra.homecluster.dev) as typed models, and what is generated from them.

Why pydantic v2 and not dataclasses: the same classes serve two readers. The controller parses API
objects into them (with camelCase wire names mapped to snake_case attributes, enums, timestamps and
the same range and pattern checks the CRD carries), and the CRD generator reads their field
metadata (``ge``, ``le``, ``pattern``, defaults, descriptions) to write the structural schema. With
dataclasses those constraints would need a second, hand-kept description that could drift from the
code. Pydantic's own JSON schema is *not* used: it is not structural ($ref, anyOf for Optional), so
``homecluster.api.schema`` walks the type annotations itself.

Modules:
- ``types``     shared field types (Duration, Quantity, Timestamp) and schema markers
- ``common``    Condition, SecretRef, Taint and other small shared objects
- ``group``, ``node``, ``nodeclaim``   the three kinds
- ``schema``    model -> structural openAPIV3Schema
- ``crd``       the CustomResourceDefinitions (names, printer columns, schema)
- ``generate``  ``homecluster crds``

Defaulting, pruning and validation of custom resources against a CRD schema (what the API server does
with these CRDs) is the lab's: homecluster_lab.crdcheck.
"""
from homecluster.api.group import Group, GroupSpec, GroupStatus
from homecluster.api.node import Node, NodeSpec, NodeStatus
from homecluster.api.nodeclaim import NodeClaim, NodeClaimSpec, NodeClaimStatus

__all__ = [
    "Group", "GroupSpec", "GroupStatus",
    "Node", "NodeSpec", "NodeStatus",
    "NodeClaim", "NodeClaimSpec", "NodeClaimStatus",
]
