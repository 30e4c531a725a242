#!/usr/bin/env python3
"""Watch the alerts fire in Prometheus's own rule engine (`promtool test rules`), on recorded series.

Each case is a recording of what Prometheus would scrape -- the operator scraped for 10 minutes and then gone,
the autoscaler never calling, ... -- and when each alert must be quiet or firing. The rules are the ones
shipped (config/components/prometheus-rule, the same groups as the chart's PrometheusRule and docs/metrics.md).

  scripts/alert-drill.py                         every case; exit 1 when promtool disagrees
  scripts/alert-drill.py "operator goes away"    one case
  scripts/alert-drill.py --list                  the cases and what each expects

Needs promtool (Debian's prometheus package; scripts/system-deps.sh installs it).
tests/install/test_alert_rules.py runs every case.
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

RULE = Path(__file__).resolve().parents[1] / "config" / "components" / "prometheus-rule" / "prometheus-rule.yaml"
BUILD_INFO = 'homecluster_build_info{version="0.9.0"}'
REFRESH = 'homecluster_provider_rpcs_total{method="Refresh",code="OK"}'
# case -> (recorded series: (series, promtool's values notation), [(alert, at, firing severity or None)])
CASES = {
    # the operator is scraped for 10 minutes, then its series are gone
    "operator goes away": ([(BUILD_INFO, "1x10 _x30"), (REFRESH, "0+6x10 _x30")], [
        ("HomeclusterOperatorDown", "9m", None),
        ("HomeclusterOperatorDown", "25m", "critical"),
        ("HomeclusterAutoscalerSilent", "35m", None),  # quiet: the operator-down alert says it
    ]),
    "autoscaler calls every scan": ([(BUILD_INFO, "1x40"), (REFRESH, "0+6x40")], [
        ("HomeclusterAutoscalerSilent", "35m", None), ("HomeclusterOperatorDown", "35m", None),
    ]),
    "autoscaler never called": ([(BUILD_INFO, "1x40")], [
        ("HomeclusterAutoscalerSilent", "5m", None),
        ("HomeclusterAutoscalerSilent", "25m", "critical"),
    ]),
    "autoscaler stopped calling": ([(BUILD_INFO, "1x60"), (REFRESH, "0+6x10 60x50")], [
        ("HomeclusterAutoscalerSilent", "15m", None),
        ("HomeclusterAutoscalerSilent", "35m", "critical"),
    ]),
}


def rules() -> list[dict]:
    return [r for g in yaml.safe_load(RULE.read_text())["spec"]["groups"] for r in g["rules"]]


def _expected(name: str, severity: str | None) -> list[dict]:
    if severity is None:
        return []
    annotations = next(r for r in rules() if r["alert"] == name)["annotations"]
    return [{"exp_labels": {"severity": severity}, "exp_annotations": annotations}]


def write(folder: Path, case: str) -> Path:
    """The rule file and promtool's test file of `case` in `folder`; the test file's path."""
    series, expectations = CASES[case]
    (folder / "rules.yaml").write_text(yaml.safe_dump(yaml.safe_load(RULE.read_text())["spec"]))
    test = folder / "test.yaml"
    test.write_text(yaml.safe_dump({
        "rule_files": ["rules.yaml"], "evaluation_interval": "1m",
        "tests": [{"interval": "1m", "input_series": [{"series": s, "values": v} for s, v in series],
                   "alert_rule_test": [{"alertname": name, "eval_time": at, "exp_alerts": _expected(name, sev)}
                                       for name, at, sev in expectations]}]}))
    return test


def describe(case: str) -> str:
    series, expectations = CASES[case]
    said = [f"{name} {'fires (' + sev + ')' if sev else 'is quiet'} at {at}" for name, at, sev in expectations]
    return f"{case}: {'; '.join(said)}"


def drill(case: str, promtool: str) -> bool:
    with tempfile.TemporaryDirectory(prefix="alert-drill-") as folder:
        test = write(Path(folder), case)
        done = subprocess.run([promtool, "test", "rules", test.name], capture_output=True, text=True, timeout=60,
                              cwd=folder)
    verdict = "as expected" if done.returncode == 0 else "NOT as expected"
    print(f"{describe(case)} -- promtool: {verdict}")
    if done.returncode != 0:
        print(done.stdout + done.stderr, file=sys.stderr)
    return done.returncode == 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="*", metavar="CASE", help=f"one of: {', '.join(CASES)} (default: all)")
    parser.add_argument("--list", action="store_true", help="print the cases and what each expects")
    args = parser.parse_args(argv)
    unknown = [c for c in args.cases if c not in CASES]
    if unknown:
        parser.error(f"no case {unknown[0]!r}; the cases: {', '.join(CASES)}")
    if args.list:
        print("\n".join(describe(c) for c in CASES))
        return 0
    promtool = shutil.which("promtool")
    if promtool is None:
        print("alert-drill: promtool is missing: install Debian's prometheus package (scripts/system-deps.sh does)",
              file=sys.stderr)
        return 2
    results = [drill(case, promtool) for case in args.cases or CASES]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
