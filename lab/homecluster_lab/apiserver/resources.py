"""What the server serves: one `ResourceType` per (group, plural), built-ins plus CRD-defined ones.

A resource is stored once and served at every version it lists (no conversion: the lab's CRDs have one
version, and built-ins are served at the single version clients use).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Key = tuple[str, str]  # (group, plural)

STANDARD_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass
class ResourceType:
    group: str
    versions: list[str]
    plural: str
    singular: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    status_subresource: bool = False
    # subresources beyond status: name -> (kind, group, version) of the object posted/returned
    extra_subresources: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    # what a create does with a `status` it is given: "clear" (most kinds), "keep" (Nodes), or a default dict
    status_on_create: Any = "clear"
    strategic_merge: bool = False  # built-in types accept strategic merge patches; custom resources do not
    default_propagation: str = "Background"
    verbs: tuple[str, ...] = STANDARD_VERBS
    # CRD-only
    schemas: dict[str, dict] = field(default_factory=dict)  # version -> openAPIV3Schema
    printer_columns: dict[str, list[dict]] = field(default_factory=dict)  # version -> additionalPrinterColumns
    crd_name: str | None = None
    selectable_fields: tuple[str, ...] = ()  # the CRD's selectableFields' paths, without the leading dot

    @property
    def key(self) -> Key:
        return (self.group, self.plural)

    @property
    def storage_version(self) -> str:
        return self.versions[0]

    def api_version(self, version: str | None = None) -> str:
        version = version or self.storage_version
        return f"{self.group}/{version}" if self.group else version

    def path_prefix(self, version: str | None = None) -> str:
        version = version or self.storage_version
        return f"/apis/{self.group}/{version}" if self.group else f"/api/{version}"

    @property
    def qualified(self) -> str:
        """`pods` or `nodes.infra.homecluster.dev`: how errors name the resource."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def qualified_kind(self) -> str:
        return f"{self.kind}.{self.group}" if self.group else self.kind


def _rt(group: str, version: str, plural: str, kind: str, namespaced: bool, **kw: Any) -> ResourceType:
    return ResourceType(group=group, versions=[version], plural=plural, singular=kind.lower(), kind=kind,
                        namespaced=namespaced, strategic_merge=True, **kw)


def builtin_types() -> list[ResourceType]:
    """The built-in kinds the operator, kubectl (cordon/drain/wait/apply) and the lab's components use."""
    return [
        _rt("", "v1", "namespaces", "Namespace", False, short_names=("ns",), status_subresource=True,
            status_on_create={"phase": "Active"}),
        _rt("", "v1", "nodes", "Node", False, short_names=("no",), status_subresource=True,
            status_on_create="keep"),
        _rt("", "v1", "pods", "Pod", True, short_names=("po",), categories=("all",), status_subresource=True,
            status_on_create={"phase": "Pending"},
            extra_subresources={"eviction": ("Eviction", "policy", "v1")}),
        _rt("", "v1", "events", "Event", True, short_names=("ev",)),
        _rt("", "v1", "secrets", "Secret", True),
        _rt("", "v1", "configmaps", "ConfigMap", True, short_names=("cm",)),
        _rt("", "v1", "services", "Service", True, short_names=("svc",), categories=("all",),
            status_subresource=True),
        _rt("", "v1", "serviceaccounts", "ServiceAccount", True, short_names=("sa",)),
        _rt("", "v1", "endpoints", "Endpoints", True, short_names=("ep",)),
        _rt("apps", "v1", "daemonsets", "DaemonSet", True, short_names=("ds",), categories=("all",),
            status_subresource=True),
        _rt("apps", "v1", "deployments", "Deployment", True, short_names=("deploy",), categories=("all",),
            status_subresource=True),
        _rt("apps", "v1", "replicasets", "ReplicaSet", True, short_names=("rs",), categories=("all",),
            status_subresource=True),
        _rt("apps", "v1", "statefulsets", "StatefulSet", True, short_names=("sts",), categories=("all",),
            status_subresource=True),
        _rt("batch", "v1", "jobs", "Job", True, categories=("all",), status_subresource=True,
            default_propagation="Orphan"),
        _rt("coordination.k8s.io", "v1", "leases", "Lease", True),
        _rt("events.k8s.io", "v1", "events", "Event", True, short_names=("ev",)),
        _rt("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True, short_names=("pdb",),
            status_subresource=True),
        _rt("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False,
            short_names=("crd", "crds"), status_subresource=True),
        _rt("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations",
            "ValidatingWebhookConfiguration", False),
        _rt("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations",
            "MutatingWebhookConfiguration", False),
        # stored, not enforced (the real control plane enforces them: tests/k8s/test_k8s_job_confinement.py)
        _rt("admissionregistration.k8s.io", "v1", "validatingadmissionpolicies", "ValidatingAdmissionPolicy", False,
            status_subresource=True),
        _rt("admissionregistration.k8s.io", "v1", "validatingadmissionpolicybindings",
            "ValidatingAdmissionPolicyBinding", False),
        _rt("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False),
        _rt("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False),
        _rt("rbac.authorization.k8s.io", "v1", "roles", "Role", True),
        _rt("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True),
        _rt("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False, short_names=("pc",)),
    ]


class Registry:
    """The set of served resources, looked up by (group, version, plural) as URLs name them."""

    def __init__(self, types: list[ResourceType]):
        self._types: dict[Key, ResourceType] = {}
        for rt in types:
            self.add(rt)

    def add(self, rt: ResourceType) -> None:
        self._types[rt.key] = rt

    def remove(self, key: Key) -> None:
        self._types.pop(key, None)

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        rt = self._types.get((group, plural))
        return rt if rt is not None and version in rt.versions else None

    def by_key(self, key: Key) -> ResourceType | None:
        return self._types.get(key)

    def by_kind(self, api_version: str, kind: str) -> ResourceType | None:
        group, _, version = api_version.rpartition("/")
        for rt in self._types.values():
            if rt.group == group and rt.kind == kind and version in rt.versions:
                return rt
        return None

    def all(self) -> list[ResourceType]:
        return list(self._types.values())

    def group_versions(self) -> dict[str, list[str]]:
        """group -> versions (preferred first), for /apis discovery; the core group is left out."""
        out: dict[str, list[str]] = {}
        for rt in self._types.values():
            if not rt.group:
                continue
            versions = out.setdefault(rt.group, [])
            for v in rt.versions:
                if v not in versions:
                    versions.append(v)
        return out

    def in_group_version(self, group: str, version: str) -> list[ResourceType]:
        return [rt for rt in self._types.values() if rt.group == group and version in rt.versions]
