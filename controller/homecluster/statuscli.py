"""`homecluster status`: the pool at a glance, without kubectl.

Three tables from one read of the API: the slots (NAME GROUP POWER PHASE CLAIM ATTEMPT AGE), the live
claims (NAME SLOT PHASE ATTEMPT REASON DEADLINE AGE; ended claims kept for their TTL are counted, not
listed, unless --all) and the lifecycle Jobs that run now in the operator's namespace (startups and
shutdowns). `render` is pure; the rows are homecluster.glance's, which the lab's live view shows too.
"""
from __future__ import annotations

import argparse
import datetime as dt
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from homecluster.clikube import add_connection_arguments, api_client, list_ours, run_verb
from homecluster.glance import CLAIM_COLUMNS, NONE, age, claim_row, slot_row, table
from homecluster.kube import client as kube
from homecluster.names import LABEL_JOB_KIND, LABEL_MANAGED_BY, LABEL_SLOT, MANAGED_BY

ENDED = ("failed", "completed")
JOB_COLUMNS = ("NAME", "KIND", "SLOT", "STATE", "AGE")


def _phase(claim: Mapping[str, Any]) -> str:
    return (claim.get("status") or {}).get("phase") or "pending"


def job_state(job: Mapping[str, Any]) -> str:
    status = job.get("status") or {}
    for cond in status.get("conditions") or []:
        if cond.get("status") == "True" and cond.get("type") in ("Complete", "Failed"):
            return "succeeded" if cond["type"] == "Complete" else "failed"
    return "running" if status.get("active") else "starting"


def render(slots: Sequence[Mapping[str, Any]], claims: Sequence[Mapping[str, Any]],
           jobs: Sequence[Mapping[str, Any]], now: dt.datetime, *, all_claims: bool = False) -> str:
    slot_rows = [slot_row(s, "", now)[:7] for s in sorted(slots, key=lambda s: s["metadata"]["name"])]
    ordered = sorted(claims, key=lambda c: (c["metadata"].get("creationTimestamp") or "", c["metadata"]["name"]))
    shown = [c for c in ordered if all_claims or _phase(c) not in ENDED]
    hidden = len(ordered) - len(shown)
    running = [j for j in sorted(jobs, key=lambda j: j["metadata"]["name"]) if job_state(j) in ("starting", "running")]
    job_rows = [(j["metadata"]["name"], (j["metadata"].get("labels") or {}).get(LABEL_JOB_KIND, NONE),
                 (j["metadata"].get("labels") or {}).get(LABEL_SLOT, NONE), job_state(j), age(j, now))
                for j in running]
    on = sum(1 for s in slots if (s.get("status") or {}).get("powerState") == "on")
    parts = [f"slots ({len(slot_rows)}, {on} on)",
             table(("NAME", "GROUP", "POWER", "PHASE", "CLAIM", "ATTEMPT", "AGE"), slot_rows) if slot_rows
             else "(no slots: create infra.homecluster.dev Nodes)", "",
             f"claims ({len(shown)} live" + (f", {hidden} ended kept for their TTL; --all lists them)" if hidden else ")"),
             table(CLAIM_COLUMNS, [claim_row(c, now) for c in shown]) if shown else "(no live claims: nothing is asked for)",
             "", f"jobs running ({len(job_rows)})",
             table(JOB_COLUMNS, job_rows) if job_rows else "(no lifecycle Job runs)"]
    return "\n".join(parts) + "\n"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_connection_arguments(parser)
    parser.add_argument("--all", action="store_true", help="list ended claims too (failed, completed)")


async def _status(args: argparse.Namespace) -> int:
    async with api_client(args.kubeconfig, args.context) as api:
        slots = await list_ours(api, kube.SLOTS)
        claims = await list_ours(api, kube.CLAIMS)
        try:
            jobs, _ = await api.list(kube.JOBS, args.namespace, label_selector=f"{LABEL_MANAGED_BY}={MANAGED_BY}")
            note = ""
        except kube.ApiError as exc:
            if exc.status != 403:
                raise
            jobs, note = [], f'(Jobs in namespace "{args.namespace}" are not readable with your rights)\n'
    sys.stdout.write(render(slots, claims, jobs, dt.datetime.now(dt.timezone.utc), all_claims=args.all) + note)
    return 0


def run(args: argparse.Namespace) -> int:
    return run_verb(_status(args))
