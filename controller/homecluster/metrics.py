"""Prometheus metrics of the claim controller, on a registry of our own that tests can reset.

What an operator of a pool wants to see without reading logs: how many claims are in each phase
per group, how often claims move and why they fail, how long lifecycle Jobs take, how many API
writes the controller makes, and whether reconcile passes error. `Metrics()` builds a fresh set on a
fresh registry, so a test (or a second operator in one process) never sees another's counts.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily

PREFIX = "homecluster"


class _ClaimsByPhase:
    """A collector that counts claims by (phase, group) from the cache at scrape time."""

    def __init__(self, source: Callable[[], Iterable[tuple[str, str]]]) -> None:
        self._source = source

    def collect(self):
        family = GaugeMetricFamily(f"{PREFIX}_claims", "NodeClaims by phase and group", labels=["phase", "group"])
        counts: dict[tuple[str, str], int] = {}
        for key in self._source():
            counts[key] = counts.get(key, 0) + 1
        for (phase, group), n in sorted(counts.items()):
            family.add_metric([phase, group], n)
        yield family


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.transitions = Counter(f"{PREFIX}_claim_transitions", "Claim phase moves", ["phase", "reason"], registry=r)
        self.failures = Counter(f"{PREFIX}_claim_failures", "Claims that ended failed, by reason", ["reason"],
                                registry=r)
        self.job_seconds = Histogram(f"{PREFIX}_job_duration_seconds", "Lifecycle Job run time", ["kind", "outcome"],
                                     buckets=(1, 5, 15, 30, 60, 120, 300, 600, 1200), registry=r)
        self.api_writes = Counter(f"{PREFIX}_api_writes", "API writes by verb, resource and status code",
                                  ["verb", "resource", "code"], registry=r)
        self.reconcile_errors = Counter(f"{PREFIX}_reconcile_errors", "Slot passes that raised", ["error"], registry=r)
        self.passes = Histogram(f"{PREFIX}_slot_pass_seconds", "Duration of one slot pass", registry=r,
                                buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5))
        self._claims_source: Callable[[], Iterable[tuple[str, str]]] = lambda: ()
        r.register(_ClaimsByPhase(lambda: self._claims_source()))

    def watch_claims(self, source: Callable[[], Iterable[tuple[str, str]]]) -> None:
        """Set where claims_by_phase reads (phase, group) pairs from."""
        self._claims_source = source

    def record_write(self, verb: str, resource: str, code: int) -> None:
        self.api_writes.labels(verb, resource, str(code)).inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)
