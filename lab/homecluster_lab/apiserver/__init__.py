"""The lab's in-memory Kubernetes API server.

kubectl, kopf and the official `kubernetes` / `kubernetes_asyncio` clients talk to it over real HTTP, so the
operator and the tests exercise the same protocol paths as against a cluster: discovery, JSON/merge/
strategic/apply patches, optimistic concurrency (409 on a stale resourceVersion, 422 on a failed JSON-patch
`test`), status subresources, finalizers and deletionTimestamp, owner-reference garbage collection, label and
field selectors, watches with history, bookmarks and 410 Gone, generateName, dryRun, CRD schema defaulting,
pruning and validation, validating admission webhooks over HTTPS, pods/eviction with PodDisruptionBudgets,
server-side Table output for `kubectl get`, a request log and fault injection.

Why aiohttp and not kmock: kmock's KubernetesEmulator lacks most of what the operator's correctness depends
on (resourceVersion and 409s, the status subresource, selectors, generateName, PUT, eviction, watch from a
resourceVersion, GC, webhooks; its lists lack kind so kubectl fails, and its core discovery is malformed; see
the team's tooling notes). Patching those into a mocking library would be more code than a focused server,
and would still fight its design (responses scripted per request rather than one consistent store). aiohttp
is already a dependency (kopf uses it), starts in milliseconds and streams watches naturally.

Layout: resources (what is served), store (objects, resourceVersions, watch history), objects (create/update
rules), defaults, patches, selectors, protobuf (kubectl's generator bodies), crds, admission (webhooks), disruption
(PDBs), engine (the write pipeline), gc (the controllers behind the server), watch, tables + jsonpath,
discovery (+ OpenAPI v3), paths and http (the HTTP layer), audit, faults, kubeconfig, server (lifecycle).

Known departures from a real API server (none of them matter to our clients; each is a choice):
- no authentication or authorisation: any token is accepted and every request is allowed;
- pods are deleted at once (no kubelet grace period); there is no scheduler or kubelet;
- one stored version per resource, no conversion webhooks; list `limit`/`continue` and `resourceVersionMatch`
  are ignored (everything current is returned in one page, which client-go and kopf accept);
- server-side apply is a strategic merge (no managedFields, no conflicts between field managers; its options
  are validated as kube-apiserver validates them);
- built-in kinds are not schema-validated beyond names (custom resources are, fully).
"""
from .audit import AuditEntry, AuditLog
from .faults import Faults
from .server import BackgroundLabAPIServer, LabAPIServer, load_crds

__all__ = ["LabAPIServer", "BackgroundLabAPIServer", "AuditLog", "AuditEntry", "Faults", "load_crds"]
