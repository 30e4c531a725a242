"""The lab's subcommands of the `homecluster` command, registered in lab/pyproject.toml under the
entry-point group `homecluster.commands` (homecluster/cli.py reads it). Each is (module, one-line help);
the module provides `add_arguments(parser)` and `run(args)` and is imported only when chosen."""
from __future__ import annotations

LAB = ("homecluster_lab.cli", "start the lab: an in-memory API server, simulated machines and the operator")
VM_IMAGE = ("homecluster_lab.vm.image", "build the tiny VM image (kernel + initramfs) the lab's VM machines boot")
