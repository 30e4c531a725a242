#!/usr/bin/env python3
"""What a waiting task costs ansible-playbook, with ansible-core's defaults and with the runner's configuration.

A lifecycle Job's tasks wait: for a BMC to report the new power state, for the machine to answer once booted,
for pods to leave a drained node. Meanwhile ansible-playbook's main process looks for the task's result every
`internal_poll_interval`. images/runner/ansible.cfg sets it to 0.05 s (ansible-core's default: 0.001 s).

Runs one playbook of one task, `sleep 0` and `sleep N`, under each configuration, R times each, and prints the
CPU of the whole ansible-playbook process tree (user + system, from the children's rusage): the fixed cost of a
playbook, the cost of each second a task waits, and the ratio of the runner's to the default's.

    .venv/bin/python benchmarks/ansible_poll.py [--wait 10] [--runs 3]

Not a test: prints, asserts nothing.
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RUNNER_CONFIG = REPO / "images" / "runner" / "ansible.cfg"
PLAYBOOK = """- hosts: localhost
  gather_facts: false
  tasks:
    - ansible.builtin.command: sleep {seconds}
      changed_when: false
"""


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def playbook_cpu(playbook: Path, config: Path | None, workdir: Path) -> float:
    """The CPU seconds one ansible-playbook run takes, its forks and modules included."""
    env = dict(os.environ, ANSIBLE_LOCAL_TEMP=str(workdir / "tmp"), ANSIBLE_NOCOLOR="1")
    env.pop("ANSIBLE_CONFIG", None)
    if config is not None:
        env["ANSIBLE_CONFIG"] = str(config)
    before = children_cpu()
    subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", "-c", "local",
                    "-e", f"ansible_python_interpreter={sys.executable}", str(playbook)], cwd=workdir, env=env, check=True, stdout=subprocess.DEVNULL, timeout=600)
    return children_cpu() - before


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wait", type=float, default=10.0, help="how long the waiting task sleeps (seconds)")
    parser.add_argument("--runs", type=int, default=3, help="runs of each playbook under each configuration")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        playbooks = {}
        for name, seconds in (("no wait", 0), (f"{args.wait:g} s wait", args.wait)):
            playbooks[name] = workdir / f"{seconds:g}.yml"
            playbooks[name].write_text(PLAYBOOK.format(seconds=f"{seconds:g}"))
        configs = {"ansible-core's defaults": None, f"runner ({RUNNER_CONFIG.relative_to(REPO)})": RUNNER_CONFIG}
        per_second = {}
        print(f"CPU of one ansible-playbook run (median of {args.runs}), seconds:")
        for label, config in configs.items():
            medians = {name: statistics.median(playbook_cpu(path, config, workdir) for _ in range(args.runs))
                       for name, path in playbooks.items()}
            fixed, waiting = medians.values()
            per_second[label] = (waiting - fixed) / args.wait
            print(f"  {label:<42} no wait {fixed:5.2f}   {args.wait:g} s wait {waiting:5.2f}   "
                  f"each second of waiting {per_second[label]:.4f} ({100 * per_second[label]:.1f} % of a core)")
        default, runner = per_second.values()
        print(f"a second of waiting costs the runner {runner / default:.2f}x what it costs ansible-core's defaults"
              if default > 0 else "no measurable cost of waiting under the defaults")


if __name__ == "__main__":
    main()
