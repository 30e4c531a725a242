"""`homecluster claim SLOT`: ask for one machine by hand, with its boot budget stamped.

A claim you write yourself carries no deadline unless you stamp one, and a claim with no
spec.deadlineAt never expires. This command builds the same claim the autoscaler's provider
builds (requestedAt = now, deadlineAt = requestedAt + max(boot floor, the Group's
maxNodeProvisionTime)) and creates it, or prints it with --dry-run so you can commit or apply it.
"""
from __future__ import annotations

import argparse
import asyncio
import getpass
import sys
from datetime import datetime, timezone

import yaml

from homecluster import API_GROUP, API_VERSION
from homecluster.model.settings import Settings, SettingsError
from homecluster.names import CLAIM_PLURAL, GROUP_PLURAL, SLOT_PLURAL
from homecluster.provider.writer import build_claim


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("slot", help="the slot (infra.homecluster.dev Node) to claim")
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
    parser.add_argument("--requested-by", default=None, help="who asks (default: your user name)")
    parser.add_argument("--dry-run", action="store_true", help="print the claim as YAML instead of creating it")
    parser.add_argument("--setting", action="append", default=[], metavar="NAME=VALUE",
                        help="a controller setting that changes the boot floor, e.g. startup_job_timeout=2m "
                             "(use the same values the operator runs with)")


def _settings(pairs: list[str]) -> Settings:
    values = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep:
            raise SettingsError(f"--setting {pair!r}: write NAME=VALUE, e.g. startup_job_timeout=2m")
        values[name.strip().replace("-", "_")] = value.strip()
    return Settings.from_mapping(values)


async def _claim(args: argparse.Namespace, settings: Settings) -> int:
    from kubernetes_asyncio import client, config

    await config.load_kube_config(config_file=args.kubeconfig)
    async with client.ApiClient() as api_client:
        api = client.CustomObjectsApi(api_client)
        try:
            slot = await api.get_cluster_custom_object(API_GROUP, API_VERSION, SLOT_PLURAL, args.slot)
        except client.ApiException as exc:
            if exc.status == 404:
                print(f'error: slot "{args.slot}" not found: list them with `kubectl get slots`', file=sys.stderr)
                return 1
            raise
        group_name = (slot.get("spec") or {}).get("groupRef", "")
        try:
            group = await api.get_cluster_custom_object(API_GROUP, API_VERSION, GROUP_PLURAL, group_name)
        except client.ApiException as exc:
            if exc.status == 404:
                print(f'error: slot "{args.slot}" names the Group "{group_name}" in spec.groupRef, which does not '
                      f"exist: create the Group or fix the slot's spec.groupRef", file=sys.stderr)
                return 1
            raise
        body = build_claim(slot, group, datetime.now(timezone.utc), settings,
                           requested_by=args.requested_by or getpass.getuser())
        if args.dry_run:
            body["metadata"]["name"] = body["metadata"].pop("generateName") + "manual"
            sys.stdout.write(yaml.safe_dump(body, sort_keys=False))
            return 0
        try:
            created = await api.create_cluster_custom_object(API_GROUP, API_VERSION, CLAIM_PLURAL, body)
        except client.ApiException as exc:
            print(f"error: the API server refused the claim: {exc.reason}: {exc.body}", file=sys.stderr)
            return 1
        spec = created["spec"]
        print(f'nodeclaim "{created["metadata"]["name"]}" created for slot "{args.slot}": '
              f'requestedAt {spec["requestedAt"]}, deadlineAt {spec["deadlineAt"]}')
        return 0


def run(args: argparse.Namespace) -> int:
    try:
        settings = _settings(args.setting)
    except SettingsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return asyncio.run(_claim(args, settings))
