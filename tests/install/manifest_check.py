"""Offline validation of one manifest: built-in kinds, our custom resources, cert-manager's and Prometheus's.

- built-in kinds: the Kubernetes JSON schemas of kubernetes-validate, strict (unknown fields refused), at
  every version in K8S_VERSIONS;
- infra.homecluster.dev objects: what the API server does with our CRDs (defaults, pruning, validation
  with CEL, via homecluster_lab.crdcheck.openapi), and a field the schema would prune counts as an error, since
  a silently dropped field in a manifest is a typo the reader believes in;
- cert-manager.io and monitoring.coreos.com: their CRDs are not vendored here, so apiVersion, kind and
  the fields their controllers require are checked by hand (REQUIRED_BY_HAND).
"""
from __future__ import annotations

import copy
from typing import Any

import kubernetes_validate

from homecluster import GROUP_VERSION
from homecluster.api.crd import all_crds
from homecluster_lab.crdcheck.openapi import apply_defaults, crd_schema, prune, pruned_paths, validate

# The cluster-autoscaler we pin (1.35) needs a 1.35 control plane; the latest schemas catch deprecations.
K8S_VERSIONS = ("1.35.0", kubernetes_validate.latest_version())

# kind -> (apiVersion, required dotted paths, (minimum, maximum) present among a group of paths)
PathGroup = tuple[tuple[int, int], tuple[str, ...]]
REQUIRED_BY_HAND: dict[str, tuple[str, tuple[str, ...], tuple[PathGroup, ...]]] = {
    "Certificate": ("cert-manager.io/v1", ("metadata.name", "metadata.namespace", "spec.secretName",
                                           "spec.issuerRef.name"),
                    (((1, 5), ("spec.commonName", "spec.dnsNames", "spec.uris", "spec.ipAddresses",
                                "spec.emailAddresses")),)),
    "Issuer": ("cert-manager.io/v1", ("metadata.name", "metadata.namespace"),
               (((1, 1), ("spec.selfSigned", "spec.ca", "spec.acme", "spec.vault", "spec.venafi")),)),
    "ServiceMonitor": ("monitoring.coreos.com/v1", ("metadata.name", "spec.selector", "spec.endpoints"), ()),
    "PrometheusRule": ("monitoring.coreos.com/v1", ("metadata.name", "metadata.namespace", "spec.groups"), ()),
    # docs/gitops.md's Flux and Argo CD objects: what their controllers refuse to work without
    "GitRepository": ("source.toolkit.fluxcd.io/v1", ("metadata.name", "metadata.namespace", "spec.url",
                                                      "spec.interval"), ()),
    "Kustomization": ("kustomize.toolkit.fluxcd.io/v1", ("metadata.name", "metadata.namespace", "spec.interval",
                                                         "spec.prune", "spec.sourceRef.kind", "spec.sourceRef.name"),
                      ()),
    "Application": ("argoproj.io/v1alpha1", ("metadata.name", "metadata.namespace", "spec.project",
                                             "spec.source.repoURL", "spec.destination"), ()),
}
CERT_USAGES = frozenset({"signing", "digital signature", "content commitment", "key encipherment", "key agreement",
                         "data encipherment", "cert sign", "crl sign", "encipher only", "decipher only", "any",
                         "server auth", "client auth", "code signing", "email protection", "s/mime",
                         "ipsec end system", "ipsec tunnel", "ipsec user", "timestamping", "ocsp signing",
                         "microsoft sgc", "netscape sgc"})


def ident(obj: dict[str, Any]) -> str:
    md = obj.get("metadata") or {}
    ns = f"{md['namespace']}/" if md.get("namespace") else ""
    return f"{obj.get('kind')}/{ns}{md.get('name')}"


def _dig(obj: Any, path: str) -> Any:
    for key in path.split("."):
        if not isinstance(obj, dict) or key not in obj:
            return None
        obj = obj[key]
    return obj


def check_custom(obj: dict[str, Any]) -> list[str]:
    crds = all_crds()
    if obj.get("kind") not in crds:
        return [f"{ident(obj)}: kind {obj.get('kind')!r} is not one of ours ({', '.join(sorted(crds))})"]
    schema = crd_schema(crds[obj["kind"]])
    defaulted = apply_defaults(copy.deepcopy(obj), schema)
    pruned = prune(copy.deepcopy(defaulted), schema)
    errors = [f"{ident(obj)}: unknown field {p} (the API server would drop it)" for p in pruned_paths(defaulted, pruned)]
    errors += [f"{ident(obj)}: {e}" for e in validate(pruned, schema)]
    return errors


def check_by_hand(obj: dict[str, Any]) -> list[str]:
    api_version, required, one_of = REQUIRED_BY_HAND[obj["kind"]]
    errors = []
    if obj.get("apiVersion") != api_version:
        errors.append(f"{ident(obj)}: apiVersion {obj.get('apiVersion')!r}, expected {api_version!r}")
    errors += [f"{ident(obj)}: {p} is required" for p in required if _dig(obj, p) in (None, "", [], {})]
    for (low, high), group in one_of:
        present = [p for p in group if _dig(obj, p) is not None]
        if not low <= len(present) <= high:
            wanted = "exactly one" if low == high == 1 else f"at least {low}"
            errors.append(f"{ident(obj)}: {wanted} of {', '.join(group)} is required, found {present or 'none'}")
    for usage in _dig(obj, "spec.usages") or []:
        if usage not in CERT_USAGES:
            errors.append(f"{ident(obj)}: spec.usages: unknown usage {usage!r}")
    ref_kind = _dig(obj, "spec.issuerRef.kind")
    if ref_kind is not None and ref_kind not in ("Issuer", "ClusterIssuer"):
        errors.append(f"{ident(obj)}: spec.issuerRef.kind {ref_kind!r} is not Issuer or ClusterIssuer")
    return errors


def check_builtin(obj: dict[str, Any], versions: tuple[str, ...] = K8S_VERSIONS) -> list[str]:
    errors = []
    for version in versions:
        try:
            kubernetes_validate.validate(obj, version, strict=True)
        except kubernetes_validate.ValidationError as exc:
            path = ".".join(str(p) for p in exc.absolute_path)
            errors.append(f"{ident(obj)} (Kubernetes {version}): {path}: {exc.message}")
        except kubernetes_validate.SchemaNotFoundError:
            errors.append(f"{ident(obj)}: no {obj.get('apiVersion')} {obj.get('kind')} in Kubernetes {version}")
    return errors


def check(obj: dict[str, Any]) -> list[str]:
    """Every problem with `obj`, as messages naming the object and the field; [] when valid."""
    if obj.get("apiVersion") == GROUP_VERSION:
        return check_custom(obj)
    if obj.get("kind") in REQUIRED_BY_HAND:
        return check_by_hand(obj)
    return check_builtin(obj)
