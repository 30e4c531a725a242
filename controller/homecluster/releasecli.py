"""`homecluster release SLOT`: give a machine back, and follow the reversal until the claim is gone.

Deleting a claim is how anyone releases a slot (the autoscaler's provider does the same): the
operator cancels a pending claim, or runs the shutdown Job of a booting or ready one, and removes its
finalizer when the reversal is done, so the claim disappears. This verb finds the slot's live claim
(the one not failed or completed), deletes it, and prints each change until it is gone or --timeout.
"""
from __future__ import annotations

import argparse
import json
import sys

from homecluster.clifollow import follow
from homecluster.clikube import (FAILED, OK, TIMED_OUT, add_connection_arguments, api_client, get_ours, list_ours,
                                 object_name, run_verb)
from homecluster.kube import client as kube

ENDED = ("failed", "completed")


EXAMPLES = """examples:
  homecluster release worker-01              delete its claim and follow the shutdown until the claim is gone
  homecluster release worker-01 --no-wait    delete the claim and return; the operator goes on
  homecluster release worker-01 -o name      print only the deleted claim's nodeclaim.infra.homecluster.dev/NAME"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = EXAMPLES
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("slot", help="the slot (infra.homecluster.dev Node) whose claim to release")
    add_connection_arguments(parser)
    parser.add_argument("--timeout", type=float, default=900.0,
                        help="seconds to follow the reversal (default 900: a shutdown Job's default bound "
                             "plus a drain), then exit 3; the reversal goes on after the command stops")
    parser.add_argument("--no-wait", action="store_true", help="delete the claim and return")
    parser.add_argument("-o", "--output", choices=("text", "name", "json"), default="text",
                        help="text: sentences (default); name: nodeclaim.infra.homecluster.dev/NAME of each claim "
                             "deleted; json: {slot, claims: [names], released}. Progress then goes to stderr")


def live_claims(claims: list[dict], slot: str) -> list[dict]:
    return [c for c in claims if (c.get("spec") or {}).get("slotRef") == slot
            and ((c.get("status") or {}).get("phase") or "pending") not in ENDED]


async def _release(args: argparse.Namespace) -> int:
    async with api_client(args.kubeconfig, args.context) as api:
        if await get_ours(api, kube.SLOTS, args.slot) is None:
            print(f'error: slot "{args.slot}" not found: list them with `homecluster status`', file=sys.stderr)
            return FAILED
        claims = live_claims(await list_ours(api, kube.CLAIMS), args.slot)  # a hand-made claim may lack the label
        say = sys.stdout if args.output == "text" else sys.stderr
        if not claims:
            print(f'slot "{args.slot}" has no live claim: nothing to release', file=say)
            _result(args, claims, released=True)
            return OK
        for claim in claims:
            name = claim["metadata"]["name"]
            try:
                await api.delete(kube.CLAIMS, name)
            except kube.ApiError as exc:
                if exc.status in (401, 403):
                    raise
                if not isinstance(exc, kube.NotFound):
                    print(f"error: the API server refused to delete nodeclaim {name}: {exc.reason}", file=sys.stderr)
                    return FAILED
            print(f'nodeclaim "{name}" of slot "{args.slot}" deleted; the operator reverses it', file=say, flush=True)
        if args.no_wait:
            _result(args, claims, released=False)
            return OK
        for claim in claims:
            name = claim["metadata"]["name"]
            reached, _ = await follow(name, lambda n=name: get_ours(api, kube.CLAIMS, n), lambda c: c is None,
                                      say, args.timeout)
            if not reached:
                print(f"error: nodeclaim {name} is still there after {args.timeout:.0f}s; the reversal goes on: "
                      f"`homecluster status` shows where it stands", file=sys.stderr)
                _result(args, claims, released=False)
                return TIMED_OUT
        print(f'slot "{args.slot}" released', file=say)
        _result(args, claims, released=True)
        return OK


def _result(args: argparse.Namespace, claims: list[dict], *, released: bool) -> None:
    """What -o name or -o json prints on stdout: the claims deleted (and, for json, whether they are gone)."""
    if args.output == "name":
        sys.stdout.write("".join(object_name(c) + "\n" for c in claims))
    elif args.output == "json":
        names = [c["metadata"]["name"] for c in claims]
        sys.stdout.write(json.dumps({"slot": args.slot, "claims": names, "released": released}) + "\n")


def run(args: argparse.Namespace) -> int:
    return run_verb(_release(args))
