"""`homecluster claim SLOT`: ask for one machine by hand, with its boot budget stamped.

A claim you write yourself carries no deadline unless you stamp one, and a claim with no
spec.deadlineAt never expires. This command builds the same claim the autoscaler's provider
builds (requestedAt = now, deadlineAt = requestedAt + max(boot floor, the Group's
maxNodeProvisionTime)) and creates it, or prints it with --dry-run so you can commit or apply it.

The boot floor is the sum of the operator's settings, read from where the operator reads them: the
flags and HOMECLUSTER_* env of the "manager" container of its Deployment (deploysettings.py). When
that Deployment cannot be read the command says so and uses the specification's defaults; --setting
overrides either. With --wait it follows the claim until ready or failed, one line per change.
"""
from __future__ import annotations

import argparse
import getpass
import json
import sys
from datetime import datetime, timezone

import yaml

from homecluster.clifollow import follow
from homecluster.clikube import (FAILED, OK, TIMED_OUT, USAGE, add_connection_arguments, api_client, get_ours,
                                 object_name, run_verb)
from homecluster.deploysettings import DEPLOYMENT, from_deployment
from homecluster.kube import client as kube
from homecluster.model.settings import Settings, SettingsError
from homecluster.provider.writer import build_claim


EXAMPLES = """examples:
  homecluster claim worker-01 --wait         create the claim and follow it until ready (exit 0) or failed (1)
  homecluster claim worker-01 --dry-run      print the claim as YAML; `kubectl apply -f` it later
  homecluster claim worker-01 -o name        print only nodeclaim.infra.homecluster.dev/NAME (for scripts)
  homecluster claim worker-01 --setting startup_job_timeout=15m --wait --timeout 1200"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = EXAMPLES
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("slot", help="the slot (infra.homecluster.dev Node) to claim")
    add_connection_arguments(parser)
    parser.add_argument("--deployment", default=DEPLOYMENT,
                        help=f"the operator's Deployment, whose flags and env give the settings (default {DEPLOYMENT})")
    parser.add_argument("--requested-by", default=None, help="who asks (default: your user name)")
    parser.add_argument("--dry-run", action="store_true", help="print the claim as YAML instead of creating it")
    parser.add_argument("--setting", action="append", default=[], metavar="NAME=VALUE",
                        help="override one of the operator's settings read from its Deployment, "
                             "e.g. startup_job_timeout=2m")
    parser.add_argument("--wait", action="store_true", help="follow the claim until it is ready or failed")
    parser.add_argument("--timeout", type=float, default=None,
                        help="seconds --wait waits before it gives up with exit 3 (default: until the claim's own "
                             "deadline, plus a minute); the claim goes on")
    parser.add_argument("-o", "--output", choices=("text", "name", "json"), default="text",
                        help="text: a sentence (default); name: nodeclaim.infra.homecluster.dev/NAME; json: the "
                             "claim as created (with --dry-run: as it would be). With name or json, the --wait "
                             "progress goes to stderr, so stdout holds only that")


def _pairs(pairs: list[str]) -> dict[str, str]:
    values = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep:
            raise SettingsError(f"--setting {pair!r}: write NAME=VALUE, e.g. startup_job_timeout=2m")
        values[name.strip().replace("-", "_")] = value.strip()
    return values


async def _cluster_settings(api, args: argparse.Namespace) -> Settings:
    """The Deployment's settings with --setting on top; a note on stderr says where they came from."""
    where = f'deployment "{args.deployment}" in namespace "{args.namespace}"'
    try:
        deployment = await api.get(kube.DEPLOYMENTS, args.deployment, args.namespace)
        base, notes = from_deployment(deployment)
        notes.insert(0, f"settings from {where}")
    except kube.ApiError as exc:
        if exc.status not in (403, 404):
            raise
        why = "not found" if exc.status == 404 else "not readable with your rights"
        base, notes = Settings(), [f"{where} {why}: the specification's default settings are used "
                                   f"(pass --namespace/--deployment, or --setting NAME=VALUE)"]
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    overrides = _pairs(args.setting)
    return Settings.from_mapping({**base.as_strings(), **overrides}) if overrides else base


async def _claim(args: argparse.Namespace) -> int:
    async with api_client(args.kubeconfig, args.context) as api:
        slot = await get_ours(api, kube.SLOTS, args.slot)
        if slot is None:
            print(f'error: slot "{args.slot}" not found: list them with `homecluster status`', file=sys.stderr)
            return FAILED
        group_name = (slot.get("spec") or {}).get("groupRef", "")
        group = await get_ours(api, kube.GROUPS, group_name)
        if group is None:
            print(f'error: slot "{args.slot}" names the Group "{group_name}" in spec.groupRef, which does not '
                  f"exist: create the Group or fix the slot's spec.groupRef", file=sys.stderr)
            return FAILED
        try:
            settings = await _cluster_settings(api, args)
        except SettingsError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return USAGE
        now = datetime.now(timezone.utc)
        body = build_claim(slot, group, now, settings, requested_by=args.requested_by or getpass.getuser())
        if args.dry_run:
            body["metadata"]["name"] = body["metadata"].pop("generateName") + "manual"
            sys.stdout.write(_shown(body, args.output) if args.output != "text" else yaml.safe_dump(body, sort_keys=False))
            return OK
        try:
            created = await api.create(kube.CLAIMS, body)
        except kube.ApiError as exc:
            if exc.status in (401, 403):
                raise
            print(f"error: the API server refused the claim: {exc.reason}: {exc.message}", file=sys.stderr)
            return FAILED
        name, spec = created["metadata"]["name"], created["spec"]
        if args.output == "text":
            print(f'nodeclaim "{name}" created for slot "{args.slot}": '
                  f'requestedAt {spec["requestedAt"]}, deadlineAt {spec["deadlineAt"]}', flush=True)
        else:
            sys.stdout.write(_shown(created, args.output))
            sys.stdout.flush()
        if not args.wait:
            return OK
        budget = datetime.fromisoformat(spec["deadlineAt"].replace("Z", "+00:00")) - now
        timeout = args.timeout if args.timeout is not None else budget.total_seconds() + 60
        reached, claim = await follow(
            name, lambda: get_ours(api, kube.CLAIMS, name),
            lambda c: c is None or (c.get("status") or {}).get("phase") in ("ready", "failed", "completed"),
            sys.stdout if args.output == "text" else sys.stderr, timeout)
        phase = ((claim or {}).get("status") or {}).get("phase")
        if not reached:
            print(f"error: nodeclaim {name} is not ready after {timeout:.0f}s; it keeps going: "
                  f"`homecluster status` shows where it stands", file=sys.stderr)
            return TIMED_OUT
        if phase == "ready":
            print(f'slot "{args.slot}" is ready', file=sys.stdout if args.output == "text" else sys.stderr)
            return OK
        print(f"error: nodeclaim {name} ended {phase or 'gone'} before ready", file=sys.stderr)
        return FAILED


def _shown(claim: dict, output: str) -> str:
    """The claim as -o name or -o json prints it."""
    if output == "name":
        return object_name(claim) + "\n"
    return json.dumps(claim, indent=2) + "\n"


def run(args: argparse.Namespace) -> int:
    try:
        _pairs(args.setting)
    except SettingsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return USAGE
    return run_verb(_claim(args))
