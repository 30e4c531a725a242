"""The `homecluster` command.

Each subcommand lives in its own module, which provides `add_arguments(parser)` and
`run(args) -> int`. Modules are imported only when their subcommand is chosen, so
`homecluster crds` does not pay for kopf or grpc imports.
"""
from __future__ import annotations

import argparse
import importlib
import sys

from homecluster.version import version

# name -> (module, one-line help)
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "run": ("homecluster.operator.main", "run the operator: claim controller, webhook and autoscaler provider"),
    "lab": ("homecluster.lab.cli", "start the lab: an in-memory API server, simulated machines and the operator"),
    "crds": ("homecluster.api.generate", "write the CustomResourceDefinitions generated from the API models"),
    "status": ("homecluster.statuscli", "the pool at a glance: slots, live claims and the Jobs that run"),
    "claim": ("homecluster.claimcli", "create a NodeClaim for a slot by hand, with its deadline stamped"),
    "release": ("homecluster.releasecli", "delete a slot's live claim and follow the reversal until it is gone"),
    "proto": ("homecluster.provider.generate", "regenerate the externalgrpc protobuf code"),
    "vm-image": ("homecluster.lab.vm.image", "build the tiny VM image (kernel + initramfs) the lab's VM machines boot"),
}


def _parser(chosen: str | None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="homecluster", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"homecluster {version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_text) in SUBCOMMANDS.items():
        sp = sub.add_parser(name, help=help_text, description=help_text)
        if name == chosen:
            importlib.import_module(module).add_arguments(sp)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    chosen = next((a for a in argv if not a.startswith("-")), None)
    if chosen not in SUBCOMMANDS:
        chosen = None
    args = _parser(chosen).parse_args(argv)
    if not args.command:
        _parser(None).print_help()
        return 2
    module = importlib.import_module(SUBCOMMANDS[args.command][0])
    return int(module.run(args) or 0)


if __name__ == "__main__":
    raise SystemExit(main())
