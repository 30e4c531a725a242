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
  scripts/mutation.py --layer lifecycle --sample 300 --sample-seed 2   a random sample of the layer's mutants
  scripts/mutation.py --layer lifecycle --sample 80 --modules recorder,slotevents   a sample of some modules
  scripts/mutation.py --layer lifecycle --combine 861:74/80,948:71/80,...   the layer's share from such samples

A whole layer can take hours on 2 cores (the lifecycle layer: ~3,500 mutants). `--sample N` runs N of its
mutants drawn at random (seeded, so a sample can be run again) and estimates the layer's killed share from
them, with a 95 % interval (Wilson). Tests written against one sample's survivors flatter that sample: measure
with a fresh seed afterwards.

The figures and what they mean: docs/reliability.md ("Mutation testing").
"""
from __future__ import annotations

import argparse
import math
import os
import random
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
# tests/model holds the rules' pure tests, tests/lifecycle the same rules through passes on the lab API server,
# tests/operator the operator's plumbing (tests/README.md); each layer keeps every test that judged it before.
PURE = ["tests/model", "tests/unit"]
SERVED = ["tests/lifecycle", "tests/operator"]
LAYERS: dict[str, tuple[list[str], list[str]]] = {
    "model": (["src/homecluster/model/*"], [*PURE, *NOT_HERE]),
    "lifecycle": (["src/homecluster/lifecycle/*"], [*SERVED, *PURE, *NOT_HERE]),
    # the operator's own plumbing (caches, Leases, leader election, the admission server's checks), judged by
    # the same tests: `make mutation LAYER=operator MODULES=leases,leasewatch,leader,admission`
    "operator": (["src/homecluster/kube/*", "src/homecluster/operator/*"],
                 [*SERVED, *PURE, *NOT_HERE]),
}
SKIP = {".git", ".venv", "build", "mutants", "controller", ".pytest_cache", "__pycache__", "collections"}
VERDICT = re.compile(r"^\s*(\S+)__mutmut_\d+: (.+?)\s*$")
NAME = re.compile(r"^\s*(\S+__mutmut_\d+): ")


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


def mutant_names(results: str) -> list[str]:
    """Every mutant's name in `mutmut results --all true`, sorted (pure)."""
    return sorted(m.group(1) for m in map(NAME.match, results.splitlines()) if m)


def draw_sample(names: list[str], size: int, seed: int) -> list[str]:
    """`size` of `names` drawn at random from `seed`: the same names for the same arguments (pure)."""
    return sorted(random.Random(seed).sample(sorted(names), min(size, len(names))))


def of_modules(names: list[str], modules: list[str]) -> list[str]:
    """The names of mutants in one of `modules` (`recorder` matches `homecluster.lifecycle.recorder.*`);
    every name when `modules` is empty (pure)."""
    if not modules:
        return names
    return [n for n in names if len(parts := n.split(".")) > 3 and parts[2] in modules]


def only(results: str, names: set[str]) -> str:
    """The lines of `results` about the mutants in `names` (pure)."""
    return "\n".join(line for line in results.splitlines() if (m := NAME.match(line)) and m.group(1) in names)


def wilson_interval(caught: int, judged_: int, z: float = 1.96) -> tuple[float, float]:
    """The 95 % interval (in percent) of a share estimated from `caught` of `judged_` draws (pure)."""
    if not judged_:
        return 0.0, 100.0
    p = caught / judged_
    centre = (p + z * z / (2 * judged_)) / (1 + z * z / judged_)
    half = z * math.sqrt(p * (1 - p) / judged_ + z * z / (4 * judged_ * judged_)) / (1 + z * z / judged_)
    return 100.0 * max(0.0, centre - half), 100.0 * min(1.0, centre + half)


def stratified(strata: list[tuple[int, int, int]], z: float = 1.96) -> tuple[float, float, float]:
    """The layer's killed share (percent) and its 95 % interval from samples of its parts (strata: module
    groups, each `(mutants in the group, caught, judged)` with every mutant of the layer in exactly one
    group): each group weighs as its share of the layer's mutants. The variance of each group's share uses
    Agresti-Coull's adjusted share (two caught and two not added), so a group whose sample had no survivor
    still counts as uncertain; the finite-population correction applies (pure)."""
    total = sum(n for n, _, _ in strata)
    estimate = sum(n / total * caught / judged_ for n, caught, judged_ in strata)
    variance = 0.0
    for n, caught, judged_ in strata:
        adjusted = (caught + 2) / (judged_ + 4)
        correction = max(0.0, (n - judged_) / (n - 1)) if n > 1 else 0.0
        variance += (n / total) ** 2 * adjusted * (1 - adjusted) / (judged_ + 4) * correction
    half = z * math.sqrt(variance)
    return 100.0 * estimate, 100.0 * max(0.0, estimate - half), 100.0 * min(1.0, estimate + half)


def parse_strata(text: str) -> list[tuple[int, int, int]]:
    """`861:72/80,948:70/80` -> [(861, 72, 80), (948, 70, 80)] (pure); ValueError naming the bad part."""
    strata = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        m = re.fullmatch(r"(\d+):(\d+)/(\d+)", part)
        if not m or not 0 < int(m.group(3)) <= int(m.group(1)) or int(m.group(2)) > int(m.group(3)):
            raise ValueError(f"--combine: {part!r} is not MUTANTS:CAUGHT/JUDGED with CAUGHT <= JUDGED <= MUTANTS")
        strata.append((int(m.group(1)), int(m.group(2)), int(m.group(3))))
    if not strata:
        raise ValueError("--combine: give at least one group as MUTANTS:CAUGHT/JUDGED")
    return strata


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
    parser.add_argument("--sample", type=int, default=0, help="run this many mutants drawn at random (0: all)")
    parser.add_argument("--sample-seed", type=int, default=1)
    parser.add_argument("--modules", default="", help="draw the sample from these modules only (comma-separated, "
                        "e.g. recorder,slotevents): a stratum of the layer")
    parser.add_argument("--combine", default="", help="print the layer's share from samples of its module groups, "
                        "MUTANTS:CAUGHT/JUDGED per group, comma-separated (e.g. 861:74/80,948:71/80), and stop")
    args = parser.parse_args()
    if args.combine:
        try:
            strata = parse_strata(args.combine)
        except ValueError as error:
            parser.error(str(error))
        share, low, high = stratified(strata)
        print(f"layer {args.layer}: killed {share:.1f} % ({low:.1f}-{high:.1f} % with 95 % confidence) from "
              f"{len(strata)} groups of {sum(n for n, _, _ in strata)} mutants, {sum(j for _, _, j in strata)} judged")
        return 0

    where = workspace(args.layer)
    env = {**os.environ, "PYTHONPATH": str(where / "mutants" / "src")}

    def mutmut(*argv: str, capture: bool = False) -> subprocess.CompletedProcess:
        return subprocess.run([str(MUTMUT), *argv], cwd=where, env=env, capture_output=capture, text=True)

    def results() -> str:
        return mutmut("results", "--all", "true", capture=True).stdout

    chosen: list[str] = []
    if args.sample:
        if not (where / "mutants").is_dir():  # make the mutants and the test map first, run none
            mutmut("run", "--max-children", str(args.max_children), "homecluster.no_such_mutant*")
        modules = [m for m in args.modules.split(",") if m]
        chosen = draw_sample(of_modules(mutant_names(results()), modules), args.sample, args.sample_seed)
        if not chosen:
            print(f"mutation: layer {args.layer} has no mutants to sample", file=sys.stderr)
            return 1
    if not args.summary_only:
        what = f"a sample of {len(chosen)} (seed {args.sample_seed})" if chosen else "every mutant"
        print(f"mutation: layer {args.layer} in {where}, {what}, {args.max_children} workers", flush=True)
        run = mutmut("run", "--max-children", str(args.max_children), *chosen)
        if run.returncode != 0:
            print(f"mutation: mutmut run exited {run.returncode}; its figures would be stale or partial", file=sys.stderr)
            return run.returncode
    out = results()
    if chosen:
        out = only(out, set(chosen))
    verdicts, survivors = summarize(out)
    percent = killed_percent(verdicts)
    if not judged(verdicts):
        print(f"mutation: no mutant of layer {args.layer} was judged by a test (run without --summary-only first)",
              file=sys.stderr)
        return 1
    print(f"\nlayer {args.layer}: " + ", ".join(f"{n} {v}" for v, n in sorted(verdicts.items())))
    print(f"killed {percent:.1f} % of the mutants the tests could judge")
    if chosen:
        low, high = wilson_interval(verdicts["killed"] + verdicts["timeout"], judged(verdicts))
        print(f"a sample of {len(chosen)} mutants (seed {args.sample_seed}): the layer's killed share is "
              f"{low:.1f}-{high:.1f} % with 95 % confidence")
    for function, n in survivors.most_common(15):
        print(f"  {n:4d} survived in {function}")
    print(f"(see one: cd {where} && {MUTMUT} show <name>)")
    return 1 if percent < args.min_killed else 0


if __name__ == "__main__":
    sys.exit(main())
