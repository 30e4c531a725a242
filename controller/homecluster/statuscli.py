"""`homecluster status`: the pool at a glance, without kubectl.

Three tables from one read of the API: the slots (NAME GROUP POWER PHASE CLAIM ATTEMPT AGE), the live
claims (NAME SLOT PHASE ATTEMPT REASON DEADLINE AGE; ended claims kept for their TTL are counted, not
listed, unless --all) and the lifecycle Jobs that run now in the operator's namespace (startups and
shutdowns). `-o wide` adds columns, `-o json|yaml` prints the same facts as one document for scripts
(statusdoc.py), `--watch` prints again on every change. `render` is pure; the rows are
homecluster.glance's, which the lab's live view shows too.
"""
from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from homecluster.clikube import OK, add_connection_arguments, api_client, list_ours, run_verb
from homecluster.glance import CLAIM_COLUMNS, NONE, age, claim_row, get_path, slot_row, table
from homecluster.kube import client as kube
from homecluster.names import LABEL_JOB_KIND, LABEL_MANAGED_BY, LABEL_SLOT, MANAGED_BY
from homecluster.statusdoc import document, job_state, running_jobs, shown_claims

JOB_COLUMNS = ("NAME", "KIND", "SLOT", "STATE", "AGE")
SLOT_COLUMNS = ("NAME", "GROUP", "POWER", "PHASE", "CLAIM", "ATTEMPT", "AGE")
WIDE_SLOT = ("NODE", "METHOD")
WIDE_CLAIM = ("REQUESTED-BY", "MESSAGE")
MESSAGE_CELL = 60  # a message is cut to this many characters in a table (the whole text is in -o json)
EXAMPLES = """examples:
  homecluster status                 the tables once
  homecluster status -o wide         with each slot's Node and power method, each claim's requester and message
  homecluster status -o json | jq '.claims[] | select(.phase == "failed")'
  homecluster status --watch         print again whenever something changes (Ctrl-C ends it)"""


def cell(value: Any, limit: int = MESSAGE_CELL) -> str:
    """API text made safe for a terminal: one line, printable characters only, at most `limit` long."""
    if value in (None, ""):
        return NONE
    text = "".join(ch if ch.isprintable() else " " for ch in str(value))
    return text if len(text) <= limit else text[:limit - 1] + "…"


def render(slots: Sequence[Mapping[str, Any]], claims: Sequence[Mapping[str, Any]],
           jobs: Sequence[Mapping[str, Any]], now: dt.datetime, *, all_claims: bool = False,
           wide: bool = False) -> str:
    ordered = sorted(slots, key=lambda s: s["metadata"]["name"])
    slot_rows = [slot_row(s, "", now)[:7] + ((cell(get_path(s, "spec", "nodeName") or get_path(s, "metadata", "name")),
                                              cell(get_path(s, "spec", "power", "method"))) if wide else ())
                 for s in ordered]
    shown, hidden = shown_claims(claims, all_claims)
    claim_rows = [claim_row(c, now) + ((cell(get_path(c, "spec", "requestedBy")),
                                        cell(get_path(c, "status", "message"))) if wide else ()) for c in shown]
    job_rows = [(j["metadata"]["name"], (j["metadata"].get("labels") or {}).get(LABEL_JOB_KIND, NONE),
                 (j["metadata"].get("labels") or {}).get(LABEL_SLOT, NONE), job_state(j), age(j, now))
                for j in running_jobs(jobs)]
    on = sum(1 for s in slots if (s.get("status") or {}).get("powerState") == "on")
    parts = [f"slots ({len(slot_rows)}, {on} on)",
             table(SLOT_COLUMNS + (WIDE_SLOT if wide else ()), slot_rows) if slot_rows
             else "(no slots: create infra.homecluster.dev Nodes)", "",
             f"claims ({len(shown)} live" + (f", {hidden} ended kept for their TTL; --all lists them)" if hidden else ")"),
             table(CLAIM_COLUMNS + (WIDE_CLAIM if wide else ()), claim_rows) if shown
             else "(no live claims: nothing is asked for)",
             "", f"jobs running ({len(job_rows)})",
             table(JOB_COLUMNS, job_rows) if job_rows else "(no lifecycle Job runs)"]
    return "\n".join(parts) + "\n"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = EXAMPLES
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    add_connection_arguments(parser)
    parser.add_argument("--all", action="store_true", help="list ended claims too (failed, completed)")
    parser.add_argument("-o", "--output", choices=("text", "wide", "json", "yaml"), default="text",
                        help="text: the tables (default); wide: the tables with more columns; json or yaml: one "
                             "document (slots, claims, jobs) for scripts")
    parser.add_argument("-w", "--watch", action="store_true",
                        help="keep reading and print again each time something changes, until Ctrl-C "
                             "(with -o json: one document per line)")
    parser.add_argument("--interval", type=float, default=2.0, help="seconds between reads with --watch (default 2)")


def output(args: argparse.Namespace, slots: list, claims: list, jobs: list, note: str) -> str:
    if args.output in ("json", "yaml"):
        doc = document(slots, claims, jobs, all_claims=args.all, jobs_readable=not note)
        if args.output == "yaml":
            import yaml
            return ("---\n" if args.watch else "") + yaml.safe_dump(doc, sort_keys=False)
        return json.dumps(doc, separators=(",", ":") if args.watch else None, indent=None if args.watch else 2) + "\n"
    text = render(slots, claims, jobs, dt.datetime.now(dt.timezone.utc), all_claims=args.all,
                  wide=args.output == "wide") + note
    return (f"--- {dt.datetime.now(dt.timezone.utc):%Y-%m-%dT%H:%M:%SZ}\n" + text) if args.watch else text


async def _read(api: kube.KubeClient, namespace: str) -> tuple[list, list, list, str]:
    slots = await list_ours(api, kube.SLOTS)
    claims = await list_ours(api, kube.CLAIMS)
    try:
        jobs, _ = await api.list(kube.JOBS, namespace, label_selector=f"{LABEL_MANAGED_BY}={MANAGED_BY}")
        note = ""
    except kube.ApiError as exc:
        if exc.status != 403:
            raise
        jobs, note = [], f'(Jobs in namespace "{namespace}" are not readable with your rights)\n'
    return slots, claims, jobs, note


async def _status(args: argparse.Namespace) -> int:
    last = None
    async with api_client(args.kubeconfig, args.context) as api:
        while True:
            slots, claims, jobs, note = await _read(api, args.namespace)
            seen = document(slots, claims, jobs, all_claims=args.all, jobs_readable=not note)
            if seen != last:  # ages alone do not count as a change
                sys.stdout.write(output(args, slots, claims, jobs, note))
                sys.stdout.flush()
                last = seen
            if not args.watch:
                return OK
            await asyncio.sleep(max(args.interval, 0.2))


def run(args: argparse.Namespace) -> int:
    try:
        return run_verb(_status(args))
    except KeyboardInterrupt:
        return OK
