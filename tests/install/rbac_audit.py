"""Does an identity's RBAC allow every API request a component made? Rules vs. request tuples.

Why: the v1alpha1 operator shipped a ClusterRole its ServiceAccount was never bound to, and CI never
noticed because the e2e ran the controller with admin rights. The lab's API server authorises nothing,
but it logs every request (homecluster_lab.apiserver.AuditLog); comparing that log with the rules that
config/ grants shows, without a real cluster, whether the installed operator would be refused.

RBAC semantics implemented (the parts our manifests use): a rule matches a request when its apiGroups,
resources ("pods" or "pods/eviction") and verbs contain the request's (or "*"), its resourceNames are
empty or contain the object's name (never for list, watch or create: the name is not known), and the
rule is granted cluster-wide (ClusterRole + ClusterRoleBinding) or in the request's namespace (a Role or
ClusterRole bound by a RoleBinding there). Cluster-scoped resources and all-namespace lists
(namespace "") need a cluster-wide grant.

HOOK FOR THE INTEGRATION SUITE: call `check_manager_rbac_against_audit(audit_entries)` after a scenario
and assert it returns []. By default it keeps the requests whose user agent names the operator's
clients (OPERATOR_USER_AGENTS); pass `user_agent=None` when the log holds nothing else. This module lives in
tests/install, a folder tests/conftest.py puts on sys.path: `import rbac_audit` from any test.

BOTH WAYS: `rbac_both_ways(entries, service_account, user_agents, exempt)` also reports every grant the
identity's roles hold that no request used (unless `exempt` gives the reason the scenario cannot use it),
and exemptions that went stale. tests/integration/test_metrics_and_rbac.py runs it over a whole lifecycle
for the operator (OPERATOR_USER_AGENTS) and the lifecycle Jobs (`job_user_agent()`).
"""
from __future__ import annotations

import re
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
MANAGER_SA = ("homecluster-controller", "homecluster-system")
JOB_SA = ("homecluster-job", "homecluster-system")
# Requests that are not API resources (discovery, /version, OpenAPI): every authenticated user may.
NON_RESOURCE_VERBS = frozenset({"discovery"})
# The operator's two clients: its own (kube/client.py) and kopf's (watches, webhook, events).
OPERATOR_USER_AGENTS = ("homecluster-operator", "kopf")


@dataclass(frozen=True)
class Request:
    """One API request as RBAC sees it."""

    verb: str
    group: str
    resource: str
    subresource: str = ""
    namespace: str = ""
    name: str = ""

    def __str__(self) -> str:
        res = self.resource + (f"/{self.subresource}" if self.subresource else "")
        where = f" in namespace {self.namespace}" if self.namespace else " (cluster-wide)"
        group = self.group or "core"
        return f"{self.verb} {res} ({group}){where}" + (f" name={self.name}" if self.name else "")


@dataclass(frozen=True)
class Rule:
    """One PolicyRule and where it applies: namespace None = everywhere (ClusterRoleBinding)."""

    api_groups: tuple[str, ...]
    resources: tuple[str, ...]
    verbs: tuple[str, ...]
    resource_names: tuple[str, ...] = ()
    namespace: str | None = None
    source: str = ""


def _one(values: Sequence[str], wanted: str) -> bool:
    return "*" in values or wanted in values


def allows(rule: Rule, req: Request) -> bool:
    """Whether `rule` authorises `req` (Kubernetes RBAC matching, resource requests only)."""
    if rule.namespace is not None and rule.namespace != req.namespace:
        return False
    if not _one(rule.api_groups, req.group) or not _one(rule.verbs, req.verb):
        return False
    resource = req.resource + (f"/{req.subresource}" if req.subresource else "")
    if not (_one(rule.resources, resource) or
            (req.subresource and f"{req.resource}/*" in rule.resources) or
            (not req.subresource and "*/*" in rule.resources)):
        return False
    if rule.resource_names:
        # a list or watch has a name only when it selects one object (fieldSelector=metadata.name=<name>: the
        # API server's RequestInfo takes the name from it); a create or deletecollection never has one
        if req.verb in ("create", "deletecollection") or req.name not in rule.resource_names:
            return False
    return True


def uncovered(rules: Iterable[Rule], requests: Iterable[Request]) -> list[Request]:
    """The distinct requests no rule allows, in first-seen order."""
    rules = list(rules)
    out: list[Request] = []
    for req in requests:
        if req not in out and not any(allows(r, req) for r in rules):
            out.append(req)
    return out


def unused(rules: Iterable[Rule], requests: Iterable[Request]) -> list[tuple[str, str, str]]:
    """(group, resource, verb) granted by a rule and never requested: candidates for trimming.

    Informative only: a scenario rarely exercises every path (a delete of a claim, say).
    """
    requests = list(requests)
    out = []
    for rule in rules:
        for group in rule.api_groups:
            for resource in rule.resources:
                res, _, sub = resource.partition("/")
                for verb in rule.verbs:
                    if not any(r.group == group and r.resource == res and r.subresource == sub and r.verb == verb
                               for r in requests):
                        out.append((group, resource, verb))
    return out


# ------------------------------------------------------------------------------ from manifests

def render(directory: Path) -> list[dict[str, Any]]:
    """`kubectl kustomize directory`, parsed."""
    done = subprocess.run(["kubectl", "kustomize", str(directory)], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise RuntimeError(f"kubectl kustomize {directory} failed: {done.stderr.strip()}")
    return [d for d in yaml.safe_load_all(done.stdout) if d]


def _rules_of(role: Mapping[str, Any], namespace: str | None) -> list[Rule]:
    src = f"{role['kind']}/{role['metadata']['name']}"
    return [Rule(tuple(r.get("apiGroups") or ()), tuple(r.get("resources") or ()), tuple(r.get("verbs") or ()),
                 tuple(r.get("resourceNames") or ()), namespace, src)
            for r in role.get("rules") or [] if r.get("resources")]


def rules_for_service_account(objects: Iterable[Mapping[str, Any]], name: str, namespace: str) -> list[Rule]:
    """Every rule bound to the ServiceAccount name/namespace by the bindings among `objects`.

    A binding whose role is missing from `objects` is an error (the v1alpha1 bug), named in the message.
    """
    objects = list(objects)
    roles = {(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o
             for o in objects if o.get("kind") in ("Role", "ClusterRole")}
    rules: list[Rule] = []
    for binding in objects:
        if binding.get("kind") not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        if not any(s.get("kind") == "ServiceAccount" and s.get("name") == name and s.get("namespace") == namespace
                   for s in binding.get("subjects") or []):
            continue
        ref = binding["roleRef"]
        bns = binding["metadata"].get("namespace", "")
        key = (ref["kind"], bns if ref["kind"] == "Role" else "", ref["name"])
        role = roles.get(key)
        if role is None:
            raise LookupError(f"{binding['kind']} {binding['metadata']['name']} binds {ref['kind']} {ref['name']!r}, "
                              f"which is not among the manifests: the ServiceAccount {namespace}/{name} gets nothing")
        scope = None if binding["kind"] == "ClusterRoleBinding" else bns
        rules.extend(_rules_of(role, scope))
    return rules


# ------------------------------------------------------------------------------ from the lab's log

def requests_from_audit(entries: Iterable[Any], user_agent: str | Sequence[str] | None = None) -> list[Request]:
    """Requests of the lab's AuditLog entries (verb, resource, group, namespace, name, subresource).

    Discovery requests are dropped; `user_agent` keeps only entries whose user agent contains it (or
    one of them). A dry run still needs the right, so dry runs are kept.
    """
    agents = (user_agent,) if isinstance(user_agent, str) else user_agent
    out = []
    for e in entries:
        if e.verb in NON_RESOURCE_VERBS or not e.resource:
            continue
        if agents is not None and not any(a in (e.user_agent or "") for a in agents):
            continue
        out.append(Request(e.verb, e.group, e.resource, e.subresource, e.namespace, e.name))
    return out


def check_manager_rbac_against_audit(entries: Iterable[Any], *,
                                     user_agent: str | Sequence[str] | None = OPERATOR_USER_AGENTS,
                                     config_dir: Path = REPO / "config" / "default",
                                     service_account: tuple[str, str] = MANAGER_SA) -> list[Request]:
    """THE HOOK: the operator's requests in the lab's log that config/default's RBAC would refuse.

    An empty list means the installed operator is allowed everything it did in the scenario.
    """
    rules = rules_for_service_account(render(config_dir), *service_account)
    return uncovered(rules, requests_from_audit(entries, user_agent))


# ------------------------------------------------------------------------------ both ways, for the lab test

def job_user_agent() -> str:
    """The user agent the collection's node modules send (module_utils/kube_client.py's USER_AGENT).

    The lab's own components (executor, kubelets) use kubernetes_asyncio, whose agent differs:
    `distinct_job_agent()` says whether the two can be told apart in the log. Read from the file, as the
    collection's module_utils import only under the ansible_collections namespace.
    """
    text = (REPO / "plugins" / "module_utils" / "kube_client.py").read_text()
    found = re.search(r'^USER_AGENT = "([^"]+)"$', text, re.M)
    assert found, "plugins/module_utils/kube_client.py has no USER_AGENT line"
    return found.group(1)


async def distinct_job_agent() -> str | None:
    """None when the Job pods' requests can be told from the lab's own in the log, else why not.

    Async because kubernetes_asyncio's client (the lab's executor and kubelets) needs a running loop.
    """
    from kubernetes_asyncio.client import ApiClient
    async with ApiClient() as lab_client:
        lab_agent = lab_client.user_agent
    job_agent = job_user_agent()
    if job_agent == lab_agent:
        return (f"the Job pods' node modules and the lab's client (kubernetes_asyncio) send the same user agent "
                f"{job_agent!r}; their requests cannot be told apart in the request log")
    return None


def wildcards(rules: Iterable[Rule]) -> list[str]:
    """Rules that grant a wildcard verb, resource or API group, named by their source."""
    out = []
    for rule in rules:
        for what, values in (("verb", rule.verbs), ("resource", rule.resources), ("apiGroup", rule.api_groups)):
            if any("*" in v for v in values):
                out.append(f"{rule.source}: wildcard {what} in {list(values)}")
    return out


def grants(rules: Iterable[Rule]) -> list[tuple[str, str, str]]:
    """Every (group, resource[/subresource], verb) the rules grant, in rule order, without repeats."""
    out: list[tuple[str, str, str]] = []
    for rule in rules:
        for group in rule.api_groups:
            for resource in rule.resources:
                for verb in rule.verbs:
                    if (group, resource, verb) not in out:
                        out.append((group, resource, verb))
    return out


def used(grant: tuple[str, str, str], requests: Iterable[Request]) -> bool:
    group, resource, verb = grant
    res, _, sub = resource.partition("/")
    return any(r.group == group and r.resource == res and r.subresource == sub and r.verb == verb for r in requests)


@dataclass(frozen=True)
class Comparison:
    """One identity's rules against the requests its component made."""

    refused: list[Request]  # made, and no rule allows it: the installed component would get 403
    idle: list[tuple[str, str, str]]  # granted, never used, and no reason given: trim it or exercise it
    stale: list[tuple[str, str, str]]  # given a reason for being unused, yet used (or no longer granted)

    @property
    def clean(self) -> bool:
        return not (self.refused or self.idle or self.stale)


def rbac_both_ways(entries: Iterable[Any], service_account: tuple[str, str], user_agent: str | Sequence[str],
                   exempt: Mapping[tuple[str, str, str], str] | None = None,
                   config_dir: Path = REPO / "config" / "default") -> Comparison:
    """Compare one identity's rules with its component's requests in `entries`, both ways.

    `exempt` maps a grant (group, resource, verb) to the reason it cannot be exercised where `entries`
    came from. An exemption for a grant that was used, or is no longer granted, is reported as stale, so
    the list of reasons cannot rot.
    """
    rules = rules_for_service_account(render(config_dir), *service_account)
    requests = requests_from_audit(entries, user_agent)
    exempt = dict(exempt or {})
    granted = grants(rules)
    idle = [g for g in granted if not used(g, requests) and g not in exempt]
    stale = [g for g in exempt if used(g, requests) or g not in granted]
    return Comparison(uncovered(rules, requests), idle, stale)
