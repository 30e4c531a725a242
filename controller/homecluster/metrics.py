"""Prometheus metrics of `homecluster run`, on a registry of our own that tests can reset.

What an operator of a pool wants to see without reading logs: how many claims are in each phase
per group, how often claims move and why they fail, how long a boot takes and where that time goes
(startup Job, registration, readiness gate), which attempt a launch is, how long lifecycle Jobs take,
how the autoscaler's calls to the provider fare, how many API writes the controller makes, and
whether reconcile passes error. `Metrics()` builds a fresh set on a fresh registry, so a test (or a
second operator in one process) never sees another's counts. The controller and the provider run
in one process and are handed the SAME Metrics object, so one /metrics shows both.

Deadlines hit are not a metric of their own: every sub-deadline and the umbrella spec.deadlineAt
end the claim `failed` with their own reason, so `homecluster_claim_failures_total{reason}` counts
them (StartupJobTimedOut, RegistrationTimedOut, ReadinessGateTimedOut, DeadlineExceeded).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable

from prometheus_client import (GC_COLLECTOR, PLATFORM_COLLECTOR, PROCESS_COLLECTOR, CollectorRegistry, Counter, Gauge,
                               Histogram, generate_latest)
from prometheus_client.core import GaugeMetricFamily

from homecluster.version import version

PREFIX = "homecluster"
# seconds, for the stages of a boot: a lab boots in seconds, a real machine in minutes
BOOT_BUCKETS = (1, 2, 5, 10, 20, 30, 60, 120, 180, 300, 600, 900, 1200)
# seconds, for one gRPC call: read RPCs answer from memory (sub-millisecond), writes wait for the API
RPC_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
ATTEMPT_BUCKETS = (1, 2, 3, 4, 5, 10)
# seconds, for the controller's own work: passes, queue waits, event-loop lag
LATENCY_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5)


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


# the label names of the collectors that build their families at scrape time (tests and docs read them here)
COLLECTOR_LABELS = {f"{PREFIX}_claims": {"phase", "group"}, f"{PREFIX}_slot_powered_on": {"slot", "group"},
                    f"{PREFIX}_slot_phase": {"slot", "group", "phase"}}
# Node.status.phase values (model/phases.SlotPhase): every one is a series, 1 for the slot's current phase
SLOT_PHASES = ("off", "pending", "booting", "ready", "draining")


class _Slots:
    """Per-slot gauges read from the cache at scrape time ("which machines are on right now?").

    `homecluster_slot_powered_on{slot,group}`: 1 when the operator observed the machine on
    (status.powerState), 0 when off; absent until the slot has been observed. `homecluster_slot_phase
    {slot,group,phase}`: a state set (kube-state-metrics' convention, like kube_pod_status_phase), one
    series per phase, 1 for the current one, so a phase change never leaves a stale series behind.
    """

    def __init__(self, source: Callable[[], Iterable[tuple[str, str, str, str]]]) -> None:
        self._source = source

    def collect(self):
        power = GaugeMetricFamily(f"{PREFIX}_slot_powered_on", "1 when the slot's machine is observed on, 0 off",
                                  labels=["slot", "group"])
        phase = GaugeMetricFamily(f"{PREFIX}_slot_phase", "The slot's status.phase: 1 for the current phase",
                                  labels=["slot", "group", "phase"])
        for slot, group, slot_phase, power_state in sorted(self._source()):
            if power_state in ("on", "off"):
                power.add_metric([slot, group], 1 if power_state == "on" else 0)
            if slot_phase:
                for candidate in SLOT_PHASES:
                    phase.add_metric([slot, group, candidate], 1 if candidate == slot_phase else 0)
        yield power
        yield phase


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        # the process's own: process_* (CPU, memory, open fds, start time) and python_* (GC, version), as every
        # Python exporter has them -- the same collectors prometheus_client puts on its default registry
        for collector in (PROCESS_COLLECTOR, PLATFORM_COLLECTOR, GC_COLLECTOR):
            r.register(collector)
        self.transitions = Counter(f"{PREFIX}_claim_transitions", "Claim phase moves", ["phase", "reason"], registry=r)
        self.failures = Counter(f"{PREFIX}_claim_failures", "Claims that ended failed, by reason", ["reason"],
                                registry=r)
        self.job_seconds = Histogram(f"{PREFIX}_job_duration_seconds", "Lifecycle Job run time", ["kind", "outcome"],
                                     buckets=(1, 5, 15, 30, 60, 120, 300, 600, 1200), registry=r)
        self.api_writes = Counter(f"{PREFIX}_api_writes", "API writes by verb, resource and status code",
                                  ["verb", "resource", "code"], registry=r)
        self.reconcile_errors = Counter(f"{PREFIX}_reconcile_errors", "Slot passes that raised", ["error"], registry=r)
        self.passes = Histogram(f"{PREFIX}_slot_pass_seconds", "Duration of one slot pass", registry=r,
                                buckets=LATENCY_BUCKETS)
        # where controller-added latency goes: news waiting for a worker, and the event loop running late
        self.queue_wait = Histogram(f"{PREFIX}_slot_queue_wait_seconds", "A slot asked for (event, timer) to a "
                                    "worker taking it", registry=r, buckets=LATENCY_BUCKETS)
        self.loop_lag = Histogram(f"{PREFIX}_event_loop_lag_seconds", "How late a 0.25 s sleep on the operator's "
                                  "event loop wakes (CPU starvation or a blocking call)", registry=r,
                                  buckets=LATENCY_BUCKETS)
        # the boot, stage by stage (observed once, when the claim lands ready)
        self.boot_seconds = Histogram(f"{PREFIX}_boot_seconds", "Claim spec.requestedAt to ready", ["group"],
                                      buckets=BOOT_BUCKETS, registry=r)
        self.registration_seconds = Histogram(
            f"{PREFIX}_registration_seconds", "Startup Job succeeded to the corev1 Node joined (Ready)", ["group"],
            buckets=BOOT_BUCKETS, registry=r)
        self.gate_seconds = Histogram(f"{PREFIX}_gate_seconds", "corev1 Node joined to usable (claim ready)",
                                      ["group"], buckets=BOOT_BUCKETS, registry=r)
        self.launch_attempts = Histogram(f"{PREFIX}_launch_attempt", "status.attempt of claims whose boot started",
                                         ["group"], buckets=ATTEMPT_BUCKETS, registry=r)
        # the autoscaler's calls to the provider
        self.provider_rpcs = Counter(f"{PREFIX}_provider_rpcs", "externalgrpc calls answered, by method and gRPC "
                                     "status code", ["method", "code"], registry=r)
        self.provider_rpc_seconds = Histogram(f"{PREFIX}_provider_rpc_seconds", "externalgrpc call latency",
                                              ["method"], buckets=RPC_BUCKETS, registry=r)
        self._claims_source: Callable[[], Iterable[tuple[str, str]]] = lambda: ()
        r.register(_ClaimsByPhase(lambda: self._claims_source()))
        self._slots_source: Callable[[], Iterable[tuple[str, str, str, str]]] = lambda: ()
        r.register(_Slots(lambda: self._slots_source()))
        # the running version, for dashboards and for alerts that join on it (the installed distribution's)
        self.build_info = Gauge(f"{PREFIX}_build_info", "The operator's version; always 1", ["version"], registry=r)
        self.build_info.labels(version()).set(1)

    def watch_claims(self, source: Callable[[], Iterable[tuple[str, str]]]) -> None:
        """Set where claims_by_phase reads (phase, group) pairs from."""
        self._claims_source = source

    def watch_slots(self, source: Callable[[], Iterable[tuple[str, str, str, str]]]) -> None:
        """Set where the slot gauges read (slot, group, status.phase, status.powerState) from."""
        self._slots_source = source

    def record_write(self, verb: str, resource: str, code: int) -> None:
        self.api_writes.labels(verb, resource, str(code)).inc()

    def record_rpc(self, method: str, code: str, seconds: float) -> None:
        """One provider call: its gRPC status code name (OK, NOT_FOUND, ...) and how long it took."""
        self.provider_rpcs.labels(method, code).inc()
        self.provider_rpc_seconds.labels(method).observe(max(seconds, 0.0))

    def record_boot(self, group: str, total: float | None, registration: float | None, gate: float | None) -> None:
        """The stages of a boot that landed ready; a stage whose clocks are unknown is skipped."""
        for histogram, seconds in ((self.boot_seconds, total), (self.registration_seconds, registration),
                                   (self.gate_seconds, gate)):
            if seconds is not None:
                histogram.labels(group).observe(max(seconds, 0.0))

    def record_launch(self, group: str, attempt: int) -> None:
        if attempt >= 1:
            self.launch_attempts.labels(group).observe(attempt)

    def render(self) -> bytes:
        return generate_latest(self.registry)
