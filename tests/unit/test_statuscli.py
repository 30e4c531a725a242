"""`homecluster status`'s tables (statuscli.render is pure): ended claims counted, not listed, unless --all;
only the Jobs that have not finished are shown. The live tables are tested in tests/integration/test_cli_verbs.py."""
from __future__ import annotations

import datetime as dt

from homecluster.statuscli import render

NOW = dt.datetime(2026, 12, 1, 16, 0, tzinfo=dt.timezone.utc)
SLOTS = [{"metadata": {"name": "worker-02", "creationTimestamp": "2026-11-19T16:00:00Z"},
          "spec": {"groupRef": "workers"}, "status": {"powerState": "off", "phase": "off"}},
         {"metadata": {"name": "worker-01", "creationTimestamp": "2026-11-19T16:00:00Z"},
          "spec": {"groupRef": "workers"},
          "status": {"powerState": "on", "phase": "ready", "claim": "c-live", "attempt": 1}}]
CLAIMS = [{"metadata": {"name": "c-live", "creationTimestamp": "2026-12-01T14:00:00Z"}, "spec": {"slotRef": "worker-01"},
           "status": {"phase": "ready", "attempt": 1}},
          {"metadata": {"name": "c-old", "creationTimestamp": "2026-12-01T13:00:00Z"}, "spec": {"slotRef": "worker-02"},
           "status": {"phase": "failed", "attempt": 2, "reason": "StartupJobFailed"}}]


def job(name: str, **status) -> dict:
    return {"metadata": {"name": name, "creationTimestamp": "2026-12-01T15:59:00Z",
                         "labels": {"infra.homecluster.dev/job-kind": "shutdown",
                                    "infra.homecluster.dev/slot": "worker-02"}}, "status": status}


def test_ended_claims_are_counted_and_listed_only_with_all():
    text = render(SLOTS, CLAIMS, [], NOW)
    assert text.splitlines()[0] == "slots (2, 1 on)"
    assert text.splitlines()[2].split()[0] == "worker-01"  # sorted by name
    assert "claims (1 live, 1 ended kept for their TTL; --all lists them)" in text
    assert "c-old" not in text and "c-live" in text
    everything = render(SLOTS, CLAIMS, [], NOW, all_claims=True)
    assert "c-old" in everything and "StartupJobFailed" in everything


def test_only_unfinished_jobs_are_shown():
    done = job("worker-02-shutdown-1", conditions=[{"type": "Complete", "status": "True"}])
    failed = job("worker-02-shutdown-2", conditions=[{"type": "Failed", "status": "True"}])
    running = job("worker-02-shutdown-3", active=1)
    text = render(SLOTS, CLAIMS, [done, failed, running], NOW)
    assert "jobs running (1)" in text
    row = next(line.split() for line in text.splitlines() if line.startswith("worker-02-shutdown"))
    assert row == ["worker-02-shutdown-3", "shutdown", "worker-02", "running", "60s"]
    assert "(no lifecycle Job runs)" in render(SLOTS, CLAIMS, [done], NOW)


def test_api_text_reaches_the_terminal_as_one_bounded_printable_line():
    """A claim's message is untrusted: -o wide cuts it and drops control characters (a terminal escape, a
    newline that would forge a row); -o json keeps the text, bounded, for jq to escape."""
    from homecluster.statusdoc import MAX_TEXT, document

    hostile = dict(CLAIMS[0], status={"phase": "booting", "message": "\x1b[2J\nworker-09   forged" + "x" * 5000})
    text = render(SLOTS, [hostile], [], NOW, wide=True)
    assert "\x1b" not in text and "\nworker-09" not in text
    row = next(line for line in text.splitlines() if line.startswith("c-live"))
    assert row.endswith("…") and len(row.split("   forged")[1]) < 60, row
    doc = document(SLOTS, [hostile], [])
    assert len(doc["claims"][0]["message"]) == MAX_TEXT and doc["claims"][0]["phase"] == "booting"
