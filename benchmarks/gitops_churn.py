#!/usr/bin/env python3
"""The GitOps churn at the issue's length: the provider scales the pool up and down for SECONDS (default 600)
while the real Flux reconciles it from Git every 10 s, on the real control plane.

It runs tests/k8s/test_k8s_gitops.py's no-fight test with HOMECLUSTER_GITOPS_CHURN_SECONDS set (the suite
runs it for 30 s) and prints the test's figures line: scale cycles, power transitions, flaps, Flux's
reconciles and the changes it made to our objects, and the operator's writes to a slot's or Group's spec.
Needs `make k8s flux`. docs/reliability.md ("GitOps churn") holds a run's figures.

    .venv/bin/python benchmarks/gitops_churn.py [SECONDS]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("seconds", nargs="?", type=int, default=600, help="how long the churn runs (default 600)")
    seconds = parser.parse_args().seconds
    env = {**os.environ, "HOMECLUSTER_GITOPS_CHURN_SECONDS": str(seconds)}
    argv = [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:randomly", "-n", "0",
            "tests/k8s/test_k8s_gitops.py::test_flux_and_the_provider_do_not_fight"]
    done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True)
    figures = [line for line in done.stdout.splitlines() if line.startswith("gitops churn figures:")]
    print("\n".join(figures) or done.stdout[-3000:])
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
