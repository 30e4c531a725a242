"""What to make or renew, decided from the Secrets' contents and the time (pure: no I/O, no clock).

The set: one CA (Secret homecluster-ca) that signs three leaves -- the webhook's and the provider's
serving certificates (their SANs are their Services' names, `<svc>.<ns>.svc` and
`<svc>.<ns>.svc.cluster.local`) and the autoscaler's client certificate. The Secret names and keys are
cert-manager's (config/certmanager), so the Deployment and the autoscaler mount the same Secrets in
either mode.

Rules (docs/security.md, "Self-signed mode"):
- a certificate is renewed once `renew_fraction` (2/3) of its lifetime has passed, or when it is not yet
  valid by more than `skew`;
- a Secret that does not parse, whose key is not its certificate's, or whose certificate is not what
  its role needs (a CA that is no CA, a leaf with other SANs or usages) is replaced, with a complaint
  that names it;
- a new CA re-issues every leaf; a leaf the current CA did not sign, or whose ca.crt is another CA's,
  is re-issued.
"""
from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field

from homecluster.certs.inspect import CLIENT_AUTH, SERVER_AUTH, Bad, Held, signed_by

CA_SECRET = "homecluster-ca"
WEBHOOK_SECRET = "homecluster-webhook-cert"
PROVIDER_SECRET = "homecluster-provider-server"
CLIENT_SECRET = "homecluster-provider-client"
WEBHOOK_SERVICE = "homecluster-webhook-service"
PROVIDER_SERVICE = "homecluster-provider"
CA_COMMON_NAME = "homecluster-ca"
CLIENT_COMMON_NAME = "cluster-autoscaler"


def service_names(service: str, namespace: str) -> tuple[str, ...]:
    """The names a client inside the cluster dials a Service by: the serving certificate's SANs."""
    return (f"{service}.{namespace}.svc", f"{service}.{namespace}.svc.cluster.local")


@dataclass(frozen=True)
class Leaf:
    """One leaf certificate the operator keeps: its Secret, subject, SANs and usage."""

    secret: str
    common_name: str
    dns_names: tuple[str, ...]
    server: bool  # server auth (a serving certificate) or client auth

    @property
    def usage(self):  # noqa: ANN201 - an x509 ObjectIdentifier
        return SERVER_AUTH if self.server else CLIENT_AUTH


def leaves(namespace: str, webhook_service: str = WEBHOOK_SERVICE,
           provider_service: str = PROVIDER_SERVICE) -> tuple[Leaf, ...]:
    return (Leaf(WEBHOOK_SECRET, webhook_service, service_names(webhook_service, namespace), server=True),
            Leaf(PROVIDER_SECRET, provider_service, service_names(provider_service, namespace), server=True),
            Leaf(CLIENT_SECRET, CLIENT_COMMON_NAME, (), server=False))


@dataclass(frozen=True)
class Lifetimes:
    ca: dt.timedelta = dt.timedelta(days=3650)   # the root, as config/certmanager's
    leaf: dt.timedelta = dt.timedelta(days=90)   # cert-manager's default, as config/certmanager's
    renew_fraction: float = 2 / 3
    skew: dt.timedelta = dt.timedelta(minutes=5)  # backdating of notBefore; tolerated clock difference

    def __post_init__(self) -> None:
        if not (0 < self.renew_fraction < 1):
            raise ValueError(f"renew_fraction must be between 0 and 1, not {self.renew_fraction}")
        if self.leaf <= dt.timedelta(0) or self.ca <= dt.timedelta(0):
            raise ValueError("certificate lifetimes must be positive")
        if self.leaf > self.ca:
            raise ValueError(f"a leaf ({self.leaf}) cannot outlive its CA ({self.ca})")


def renew_at(cert_not_before: dt.datetime, cert_not_after: dt.datetime, fraction: float) -> dt.datetime:
    return cert_not_before + (cert_not_after - cert_not_before) * fraction


@dataclass(frozen=True)
class Make:
    """Make (or replace) the certificate of `secret`; `reason` says why (Events and logs carry it)."""

    secret: str
    reason: str


@dataclass(frozen=True)
class Plan:
    new_ca: Make | None
    issue: tuple[Make, ...]
    complaints: tuple[str, ...] = ()   # Secrets that held something unusable, by name and reason
    next_check: dt.datetime | None = None  # the earliest renewal among what is kept

    @property
    def empty(self) -> bool:
        return self.new_ca is None and not self.issue


@dataclass
class _Due:
    times: list[dt.datetime] = field(default_factory=list)


def _time_problem(held: Held, now: dt.datetime, life: Lifetimes, due: _Due) -> str | None:
    before, after = held.cert.not_valid_before_utc, held.cert.not_valid_after_utc
    if before > now + life.skew:
        return f"its certificate is not valid until {before.isoformat()}"
    if now >= after:
        return f"its certificate expired at {after.isoformat()}"
    at = renew_at(before, after, life.renew_fraction)
    if now >= at:
        return f"renewal due at {at.isoformat()} (expires {after.isoformat()})"
    due.times.append(at)
    return None


def _ca_problem(held: Held | Bad | None, now: dt.datetime, life: Lifetimes, due: _Due) -> str | None:
    if held is None:
        return "missing"
    if isinstance(held, Bad):
        return f"unusable: {held.reason}"
    if not held.is_ca:
        return "unusable: its certificate is not a CA"
    if not signed_by(held.cert, held.cert):
        return "unusable: its certificate is not self-signed"
    return _time_problem(held, now, life, due)


def _leaf_problem(leaf: Leaf, held: Held | Bad | None, ca: Held, now: dt.datetime, life: Lifetimes,
                  due: _Due) -> str | None:
    if held is None:
        return "missing"
    if isinstance(held, Bad):
        return f"unusable: {held.reason}"
    if held.is_ca:
        return "unusable: its certificate is a CA"
    if held.ca_pem != ca.cert_pem or not signed_by(held.cert, ca.cert):
        return f"the CA changed (not signed by the current {CA_SECRET})"
    if tuple(sorted(held.dns_names)) != tuple(sorted(leaf.dns_names)):
        return f"its names {list(held.dns_names)} are not {list(leaf.dns_names)}"
    if not held.has_usage(leaf.usage):
        return f"it lacks the {'server' if leaf.server else 'client'} auth usage"
    return _time_problem(held, now, life, due)


def plan(held: Mapping[str, Held | Bad | None], wanted: tuple[Leaf, ...], now: dt.datetime,
         life: Lifetimes = Lifetimes()) -> Plan:
    """Decide from what each Secret holds (by name; None: absent) what to make, at `now` (UTC, aware)."""
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    due = _Due()
    complaints = []
    ca_held = held.get(CA_SECRET)
    ca_problem = _ca_problem(ca_held, now, life, due)
    if isinstance(ca_held, Bad) or (ca_problem or "").startswith("unusable"):
        complaints.append(f"Secret {CA_SECRET}: {ca_problem}; replacing it")
    if ca_problem is not None:
        reason = f"{CA_SECRET}: {ca_problem}"
        issues = []
        for leaf in wanted:
            if isinstance(held.get(leaf.secret), Bad):
                complaints.append(f"Secret {leaf.secret}: unusable: {held[leaf.secret].reason}; replacing it")
            issues.append(Make(leaf.secret, f"new CA ({reason})"))
        return Plan(Make(CA_SECRET, ca_problem), tuple(issues), tuple(complaints), None)
    assert isinstance(ca_held, Held)
    issues = []
    for leaf in wanted:
        this = held.get(leaf.secret)
        problem = _leaf_problem(leaf, this, ca_held, now, life, due)
        if problem is None:
            continue
        if problem.startswith("unusable"):
            complaints.append(f"Secret {leaf.secret}: {problem}; replacing it")
        issues.append(Make(leaf.secret, problem))
    return Plan(None, tuple(issues), tuple(complaints), min(due.times) if due.times else None)
