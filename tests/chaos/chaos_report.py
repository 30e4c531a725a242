"""A fault campaign run's report (what was done, what broke, how the pool converged) and the record a kept run
leaves next to the lab's files (chaos-record.txt: the schedule, the recorded events, each machine's power log)."""
from __future__ import annotations

import collections
import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chaos_invariants import Event, Violation
from chaos_record import record_line
from chaos_schedule import Action


@dataclass
class Report:
    seed: int
    schedule: list[Action]
    done: collections.Counter = field(default_factory=collections.Counter)  # kind -> carried out
    skipped: collections.Counter = field(default_factory=collections.Counter)  # kind -> nothing to act on
    caller_errors: collections.Counter = field(default_factory=collections.Counter)  # gRPC/API refusals by code
    violations: list[Violation] = field(default_factory=list)
    converged_after: float | None = None  # seconds after the faults stopped; None: never within the timeout
    not_converged: list[str] = field(default_factory=list)
    job_timeouts: list[tuple[float, str]] = field(default_factory=list)  # (when, slot) of Jobs past their deadline
    load_limited: bool = False  # did not converge, but every slot holding it up had a Job time out meanwhile
    restarts: int = 0
    max_downtime: float = 0.0
    rss_kib: list[int] = field(default_factory=list)  # the operator's RSS, sampled every second
    claims: int = 0
    phases: collections.Counter = field(default_factory=collections.Counter)  # final claim phases and reasons
    events: list[Event] = field(default_factory=list)
    group_adds: list[Any] = field(default_factory=list)  # chaos_groups.GroupAdd, one per group-add begun
    blips: list[str] = field(default_factory=list)  # the slots whose Node a notready-blip made NotReady
    wall: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.violations

    def summary(self) -> str:
        rss = f"{max(self.rss_kib) // 1024} MiB max, {self.rss_kib[-1] // 1024} MiB last" if self.rss_kib else "n/a"
        conv = f"{self.converged_after:.1f}s" if self.converged_after is not None else \
            "not converged, Jobs timing out (load)" if self.load_limited else "NOT CONVERGED"
        lines = [f"seed {self.seed}: {'ok' if self.ok else 'VIOLATIONS'}; {sum(self.done.values())} actions "
                 f"({', '.join(f'{k} {v}' for k, v in sorted(self.done.items()))}), skipped "
                 f"{sum(self.skipped.values())}; operator restarts {self.restarts} (longest down "
                 f"{self.max_downtime:.1f}s); claims {self.claims} "
                 f"({', '.join(f'{k} {v}' for k, v in sorted(self.phases.items()))}); "
                 f"Jobs past their deadline {len(self.job_timeouts)}; converged after {conv}; operator RSS {rss}; "
                 f"wall {self.wall:.0f}s"]
        if self.caller_errors:
            lines.append("  answers: " + ", ".join(f"{k} {v}" for k, v in sorted(self.caller_errors.items())))
        if self.blips:
            lines.append("  NotReady blips on: " + ", ".join(self.blips))
        lines += [f"  {v}" for v in self.violations]
        lines += [f"  not converged: {r}" for r in self.not_converged]
        return "\n".join(lines)



def write_record(workdir: Path, report: Report, machine_logs: dict[str, list[Any]], end: float,
                  slack: float) -> None:
    """The run's schedule, record and machines' power logs next to the lab's own files (kept with --keep)."""
    with contextlib.suppress(OSError):
        workdir.mkdir(parents=True, exist_ok=True)
        with open(workdir / "chaos-record.txt", "w") as out:
            out.write(f"seed {report.seed}\nend {end:.3f}\nslack {slack:.3f}\nschedule:\n")
            out.writelines(f"  {a}\n" for a in report.schedule)
            out.write("record:\n")
            out.writelines(record_line(e) for e in report.events)
            for slot, log in machine_logs.items():
                out.write(f"machine {slot}:\n")
                out.writelines(f"  {e.at:.3f} {e.action} {e.source}\n" for e in log)


def rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0
