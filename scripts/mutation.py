#!/usr/bin/env python3
"""Mutation testing of one layer with mutmut (`make mutation LAYER=lifecycle`): how many of the small
changes mutmut makes to the code the tests notice, and which functions they miss.

mutmut runs the tests against a copy of the code in `mutants/` and imports the mutated package from
`mutants/` (or `mutants/src/`); our package lives in `controller/`. So each run works in a folder of its
own, `build/mutation/<layer>/`, that links `src` to `controller/` and every other top-level entry to the
checkout, with a pyproject.toml that is the project's plus the layer's `[tool.mutmut]` table. Results
stay there between runs (mutmut re-runs only what changed).

  scripts/mutation.py --layer model                 run, then print the summary
  scripts/mutation.py --layer lifecycle --min-killed 85   exit 1 below 85 % killed
  scripts/mutation.py --layer model --summary-only  print the last run's summary

The figures and what they mean: docs/reliability.md ("Mutation testing").
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WORK = REPO / "build" / "mutation"
MUTMUT = Path(sys.executable).with_name("mutmut")

# What each layer mutates (globs under src/ = controller/) and which tests judge the mutants. The plugin
# tests need the collection on ANSIBLE_COLLECTIONS_PATH and judge nothing here, so they are left out; so are
# the tests that read controller/ itself (the wheels, this script), absent in mutmut's copy (the code is in src/).
NOT_HERE = ["--ignore=tests/unit/plugins", "--ignore=tests/unit/test_distributions.py",
            "--ignore=tests/unit/test_mutation_summary.py"]
LAYERS: dict[str, tuple[list[str], list[str]]] = {
    "model": (["src/homecluster/model/*"], ["tests/unit", *NOT_HERE]),
    "lifecycle": (["src/homecluster/lifecycle/*"], ["tests/operator", "tests/unit", *NOT_HERE]),
}
SKIP = {".git", ".venv", "build", "mutants", "controller", ".pytest_cache", "__pycache__", "collections"}
VERDICT = re.compile(r"^\s*(\S+)__mutmut_\d+: (.+?)\s*$")


def mutmut_table(layer: str) -> str:
    """The `[tool.mutmut]` table for a layer (pure)."""
    mutate, tests = LAYERS[layer]
    copy = sorted(p.name for p in REPO.iterdir() if p.name not in SKIP and p.name != "tests")

    def toml_list(items: list[str]) -> str:
        return "[" + ", ".join(f'"{i}"' for i in items) + "]"

    return (
        "\n[tool.mutmut]\n"
        'source_paths = ["src/homecluster"]\n'
        f"only_mutate = {toml_list(mutate)}\n"
        f"pytest_add_cli_args_test_selection = {toml_list(tests)}\n"
        'pytest_add_cli_args = ["-p", "no:cacheprovider", "-q"]\n'
        f"also_copy = {toml_list(copy)}\n"
    )


def summarize(results: str) -> tuple[Counter, Counter]:
    """(verdict -> count, function -> survivors) from `mutmut results --all true` (pure)."""
    verdicts: Counter = Counter()
    survivors: Counter = Counter()
    for line in results.splitlines():
        m = VERDICT.match(line)
        if not m:
            continue
        function, verdict = m.groups()
        verdicts[verdict] += 1
        if verdict == "survived":
            survivors[function] += 1
    return verdicts, survivors


def judged(verdicts: Counter) -> int:
    """Mutants a test ran against (not those no test covers, nor those mutmut has not run yet)."""
    return sum(n for v, n in verdicts.items() if v not in ("no tests", "skipped", "not checked"))


def killed_percent(verdicts: Counter) -> float:
    """Killed (or timed out: the mutant hung the tests) per mutant the tests could judge."""
    caught = verdicts["killed"] + verdicts["timeout"]
    return 100.0 * caught / judged(verdicts) if judged(verdicts) else 0.0


def workspace(layer: str) -> Path:
    """build/mutation/<layer>/ with its links and pyproject.toml (made anew each run)."""
    where = WORK / layer
    where.mkdir(parents=True, exist_ok=True)
    for entry in REPO.iterdir():
        if entry.name in SKIP or entry.name == "pyproject.toml":  # pyproject.toml: written below
            continue
        link = where / entry.name
        if not link.is_symlink() and not link.exists():  # a test may have made it (collections/): left alone
            link.symlink_to(entry)
    src = where / "src"
    if not src.is_symlink():
        src.symlink_to(REPO / "controller")
    pyproject = where / "pyproject.toml"
    if pyproject.is_symlink():
        pyproject.unlink()
    pyproject.write_text((REPO / "pyproject.toml").read_text() + mutmut_table(layer))
    return where


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layer", choices=sorted(LAYERS), default="lifecycle")
    parser.add_argument("--max-children", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--min-killed", type=float, default=0.0, help="exit 1 below this percentage")
    parser.add_argument("--summary-only", action="store_true")
    args = parser.parse_args()

    where = workspace(args.layer)
    env = {**os.environ, "PYTHONPATH": str(where / "mutants" / "src")}
    if not args.summary_only:
        print(f"mutation: layer {args.layer} in {where} ({args.max_children} workers)", flush=True)
        run = subprocess.run([str(MUTMUT), "run", "--max-children", str(args.max_children)], cwd=where, env=env)
        if run.returncode != 0:
            print(f"mutation: mutmut run exited {run.returncode}; its figures would be stale or partial", file=sys.stderr)
            return run.returncode
    out = subprocess.run(
        [str(MUTMUT), "results", "--all", "true"], cwd=where, env=env, capture_output=True, text=True
    ).stdout
    verdicts, survivors = summarize(out)
    percent = killed_percent(verdicts)
    if not judged(verdicts):
        print(f"mutation: no mutant of layer {args.layer} was judged by a test (run without --summary-only first)",
              file=sys.stderr)
        return 1
    print(f"\nlayer {args.layer}: " + ", ".join(f"{n} {v}" for v, n in sorted(verdicts.items())))
    print(f"killed {percent:.1f} % of the mutants the tests could judge")
    for function, n in survivors.most_common(15):
        print(f"  {n:4d} survived in {function}")
    print(f"(see one: cd {where} && {MUTMUT} show <name>)")
    return 1 if percent < args.min_killed else 0


if __name__ == "__main__":
    sys.exit(main())
