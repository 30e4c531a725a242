"""homecluster: power home-lab machines on and off for the cluster-autoscaler, and see and steer the pool.

Each subcommand lives in its own module, which provides `add_arguments(parser)` and
`run(args) -> int`. Modules are imported only when their subcommand is chosen, so
`homecluster crds` does not pay for kopf or grpc imports.

Other distributions add subcommands through the entry-point group `homecluster.commands`: each entry
point names a `(module, one-line help)` pair. The lab (homecluster-lab) adds `lab` and `vm-image` so;
the operator never imports it.
"""
from __future__ import annotations

import argparse
import importlib
import sys
from importlib.metadata import entry_points

from homecluster.version import version

# name -> (module, one-line help)
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "run": ("homecluster.operator.main", "run the operator: claim controller, webhook and autoscaler provider"),
    "crds": ("homecluster.api.generate", "write the CustomResourceDefinitions generated from the API models"),
    "status": ("homecluster.statuscli", "the pool at a glance: slots, live claims and the Jobs that run"),
    "claim": ("homecluster.claimcli", "create a NodeClaim for a slot by hand, with its deadline stamped"),
    "release": ("homecluster.releasecli", "delete a slot's live claim and follow the reversal until it is gone"),
    "proto": ("homecluster.provider.generate", "regenerate the externalgrpc protobuf code"),
    "completion": ("homecluster.completion", "print the shell completion script for bash, zsh or fish"),
}
PLUGIN_GROUP = "homecluster.commands"
# commands the lab's distribution provides, so that asking for one without it says what to install
LAB_COMMANDS = ("lab", "vm-image")
LAB_MISSING = ("homecluster {name}: the lab is not installed (the `{name}` command comes with the homecluster-lab "
               "distribution). Install it with `pip install homecluster-lab`, or run `make lab` in a checkout.")


def commands() -> dict[str, tuple[str, str]]:
    """The product's subcommands, then those the installed plugins add (a plugin cannot replace one)."""
    found = dict(SUBCOMMANDS)
    for ep in sorted(entry_points(group=PLUGIN_GROUP), key=lambda ep: ep.name):
        if ep.name in found:
            continue
        try:
            module, help_text = ep.load()
        except Exception as exc:  # noqa: BLE001 - a broken plugin must not take the product's commands down
            print(f"homecluster: ignoring the command {ep.name!r} of {ep.value!r}: {exc}", file=sys.stderr)
            continue
        found[ep.name] = (str(module), str(help_text))
    return found


EPILOG = """examples:
  homecluster status                      the slots, the live claims and the Jobs that run now
  homecluster status -o json              the same as one JSON document, for scripts
  homecluster claim worker-01 --wait      power worker-01 on by hand and wait until its Node is ready
  homecluster release worker-01           give it back: drain, power off, and wait until the claim is gone
  homecluster run --help                  the operator's flags (each also read from HOMECLUSTER_<FLAG>)
  source <(homecluster completion bash)   tab completion in this shell

`homecluster COMMAND --help` says what a command does and shows its flags.
exit codes: 0 done, 1 failed, 2 usage or kubeconfig error, 3 timed out, 4 API server unreachable,
5 forbidden (credentials refused or not allowed); docs/cli.md"""


def parser(chosen: str | None, available: dict[str, tuple[str, str]]) -> argparse.ArgumentParser:
    """The command's parser; `chosen` names the subcommand whose arguments are added ("*": every one)."""
    top = argparse.ArgumentParser(prog="homecluster", description=__doc__.splitlines()[0], epilog=EPILOG,
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
    top.add_argument("--version", action="version", version=f"homecluster {version()}")
    sub = top.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_text) in available.items():
        sp = sub.add_parser(name, help=help_text, description=help_text + ".")
        if chosen in (name, "*"):
            importlib.import_module(module).add_arguments(sp)
    return top


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    available = commands()
    chosen = next((a for a in argv if not a.startswith("-")), None)
    if chosen in LAB_COMMANDS and chosen not in available:
        print(LAB_MISSING.format(name=chosen), file=sys.stderr)
        return 2
    if chosen not in available:
        chosen = None
    args = parser(chosen, available).parse_args(argv)
    if not args.command:
        parser(None, available).print_help()
        return 2
    if args.command == "completion":
        args.parser = parser("*", available)
    module = importlib.import_module(available[args.command][0])
    from homecluster.kube.kubeconfig_checks import KubeconfigError

    try:
        return int(module.run(args) or 0)
    except KubeconfigError as exc:  # `run` loads its kubeconfig inside the operator: one line, not a traceback
        print(f"homecluster {args.command}: error: no usable kubeconfig: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
