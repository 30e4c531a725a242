"""The real kube-apiserver's audit log (`--audit-log-format=json`, one event per line) read as RBAC sees it.

Pure: lines in, verdicts out (no I/O but `read`). The tests on the real control plane (tests/k8s) judge
a whole lifecycle's log with it, both ways, for one identity at a time -- the ServiceAccount's user name,
which the real authenticator wrote, not a user agent as on the in-memory server's log (rbac_audit):
- `refused(events, user)`: what the real authorizer answered 403 to that identity;
- `both_ways(events, user, rules, exempt)`: the same `Comparison` as rbac_audit.rbac_both_ways -- refused
  (by the real authorizer), idle (a grant of `rules` no request used, and no reason given in `exempt`) and
  stale (a reason given for a grant that was used after all, or is no longer granted);
- `never_made(events, user, never)`: the events of that identity matching a request it must never make
  (verb, group, resource and subresource; any namespace, any name), refused or not.
Tested on captured lines in tests/install/test_audit_log.py.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from rbac_audit import Comparison, Request, Rule, grants, used


@dataclass(frozen=True)
class Event:
    """One audit event (stage ResponseComplete): who asked what, and the answer's code."""

    user: str
    verb: str
    uri: str
    code: int
    user_agent: str = ""
    group: str = ""
    resource: str = ""  # empty for a non-resource request (/api, /version, discovery)
    subresource: str = ""
    namespace: str = ""
    name: str = ""

    @property
    def request(self) -> Request | None:
        """The request as RBAC sees it; None for a non-resource URL."""
        if not self.resource:
            return None
        return Request(self.verb, self.group, self.resource, self.subresource, self.namespace, self.name)


def service_account_user(account: tuple[str, str]) -> str:
    """The user name the real authenticator gives a ServiceAccount's token: (name, namespace) in."""
    name, namespace = account
    return f"system:serviceaccount:{namespace}:{name}"


def parse(lines: Iterable[str]) -> list[Event]:
    """One Event per request, in the log's order; blank lines are skipped, a line that is not an audit event
    is an error -- except a last line that is not whole JSON, which the API server may still be writing
    (skipped). A long-running request (a watch) is logged twice, when its response starts and when it
    ends, under one auditID: it is kept once."""
    out = []
    seen: set[str] = set()
    numbered = [(number, line) for number, line in enumerate(lines, 1) if line.strip()]
    for index, (number, line) in enumerate(numbered):
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            if index == len(numbered) - 1:
                break  # the line being written as the log was read
            raise ValueError(f"audit log line {number} is not JSON ({exc}): {line[:200]}") from exc
        if raw.get("kind") != "Event":
            raise ValueError(f"audit log line {number} is not an audit Event: {line[:200]}")
        audit_id = raw.get("auditID", "")
        if audit_id and audit_id in seen:
            continue
        seen.add(audit_id)
        ref = raw.get("objectRef") or {}
        out.append(Event(user=(raw.get("user") or {}).get("username", ""), verb=raw.get("verb", ""),
                         uri=raw.get("requestURI", ""), code=int((raw.get("responseStatus") or {}).get("code", 0)),
                         user_agent=raw.get("userAgent", ""), group=ref.get("apiGroup", ""),
                         resource=ref.get("resource", ""), subresource=ref.get("subresource", ""),
                         namespace=ref.get("namespace", ""), name=ref.get("name", "")))
    return out


def read(path: Path) -> list[Event]:
    return parse(Path(path).read_text().splitlines())


def of(events: Iterable[Event], user: str) -> list[Event]:
    return [e for e in events if e.user == user]


def refused(events: Iterable[Event], user: str) -> list[Event]:
    """That identity's requests the API server answered 403 (the authorizer, or an admission plugin)."""
    return [e for e in of(events, user) if e.code == 403]


def _distinct(requests: Iterable[Request]) -> list[Request]:
    out: list[Request] = []
    for req in requests:
        if req not in out:
            out.append(req)
    return out


def both_ways(events: Iterable[Event], user: str, rules: Iterable[Rule],
              exempt: Mapping[tuple[str, str, str], str] | None = None) -> Comparison:
    """`user`'s requests against `rules` (what its roles grant), both ways.

    refused: the distinct requests the real server refused (403); idle: every (group, resource, verb) granted
    that no request of `user` used -- answered or not, a request shows the grant is needed -- unless `exempt`
    gives the reason; stale: an exemption for a grant that was used, or that `rules` no longer grant.
    """
    mine = of(events, user)
    requests = [e.request for e in mine if e.request is not None]
    granted = grants(rules)
    exempt = dict(exempt or {})
    idle = [g for g in granted if not used(g, requests) and g not in exempt]
    stale = [g for g in exempt if used(g, requests) or g not in granted]
    return Comparison(_distinct(e.request for e in mine if e.code == 403 and e.request is not None), idle, stale)


def matches(pattern: Request, req: Request) -> bool:
    """`req` is of the kind `pattern` names: the same verb, group, resource and subresource ("*" matches any
    verb or resource); namespace and name are not compared."""
    return ((pattern.verb in ("*", req.verb)) and pattern.group == req.group
            and pattern.resource in ("*", req.resource) and pattern.subresource == req.subresource)


def never_made(events: Iterable[Event], user: str, never: Iterable[Request]) -> list[Event]:
    """`user`'s events that make a request of a kind in `never` -- refused or not, it should not be asked."""
    never = list(never)
    return [e for e in of(events, user) if e.request is not None and any(matches(p, e.request) for p in never)]
