"""The alerts (config/components/prometheus-rule; the chart and docs/metrics.md carry the same rules, as
test_components.py and test_helm_chart.py check) as an on-call person meets them: each has a severity and a
runbook_url whose section of docs/common-issues.md exists, and the operator-down and autoscaler-silent alerts
fire when the series are missing, proven with `promtool test rules` (Prometheus's own rule engine) on
recorded series.
"""
from __future__ import annotations

import re
import shutil
import subprocess

import pytest
import yaml

from install_helpers import REPO

RULE = REPO / "config" / "components" / "prometheus-rule" / "prometheus-rule.yaml"
ISSUES = REPO / "docs" / "common-issues.md"
RUNBOOKS = "https://github.com/homecluster-dev/homecluster/blob/main/docs/common-issues.md#"
SEVERITIES = {"critical", "warning"}


def rules() -> list[dict]:
    return [r for g in yaml.safe_load(RULE.read_text())["spec"]["groups"] for r in g["rules"]]


def github_anchor(heading: str) -> str:
    """The id GitHub gives a Markdown heading: lower case, punctuation dropped, spaces as dashes."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path) -> set[str]:
    return {github_anchor(h) for h in re.findall(r"^#{1,6} (.+)$", path.read_text(), re.M)}


def test_every_alert_has_a_severity_and_a_runbook_section_that_exists():
    found = anchors(ISSUES)
    names = [r["alert"] for r in rules()]
    assert {"HomeclusterOperatorDown", "HomeclusterAutoscalerSilent"} <= set(names)
    for rule in rules():
        assert rule.get("labels", {}).get("severity") in SEVERITIES, rule["alert"]
        url = rule["annotations"]["runbook_url"]
        assert url.startswith(RUNBOOKS), (rule["alert"], url)
        assert url.removeprefix(RUNBOOKS) in found, f"{rule['alert']}: no section #{url.removeprefix(RUNBOOKS)} in {ISSUES}"


def test_every_link_of_the_runbooks_lands_on_a_section():
    text = ISSUES.read_text()
    section = text[text.index("## Alerts"):]
    own = anchors(ISSUES)
    links = re.findall(r"\]\(([^)]+)\)", section)
    assert len(links) >= 8
    for link in links:
        page, _, anchor = link.partition("#")
        target = ISSUES if not page else ISSUES.parent / page
        assert target.is_file(), link
        if anchor:
            assert anchor in (own if not page else anchors(target)), f"{link}: no such section"


def test_missing_series_are_caught_by_absent_not_only_zeros():
    by_name = {r["alert"]: r["expr"] for r in rules()}
    assert "absent(homecluster_build_info)" in by_name["HomeclusterOperatorDown"]
    assert "absent_over_time(homecluster_provider_rpcs_total" in by_name["HomeclusterAutoscalerSilent"]


def _annotations(name: str) -> dict[str, str]:
    return next(r for r in rules() if r["alert"] == name)["annotations"]


def _firing(name: str, severity: str) -> tuple[str, str]:
    return (name, severity)  # resolved against the rules when the test runs


BUILD_INFO = 'homecluster_build_info{version="0.9.0"}'
REFRESH = 'homecluster_provider_rpcs_total{method="Refresh",code="OK"}'
CASES = {
    # the operator is scraped for 10 minutes, then its series are gone
    "operator goes away": ([(BUILD_INFO, "1x10 _x30"), (REFRESH, "0+6x10 _x30")], [
        ("HomeclusterOperatorDown", "9m", []),
        ("HomeclusterOperatorDown", "25m", _firing("HomeclusterOperatorDown", "critical")),
        ("HomeclusterAutoscalerSilent", "35m", []),  # quiet: the operator-down alert says it
    ]),
    "autoscaler calls every scan": ([(BUILD_INFO, "1x40"), (REFRESH, "0+6x40")], [
        ("HomeclusterAutoscalerSilent", "35m", []), ("HomeclusterOperatorDown", "35m", []),
    ]),
    "autoscaler never called": ([(BUILD_INFO, "1x40")], [
        ("HomeclusterAutoscalerSilent", "5m", []),
        ("HomeclusterAutoscalerSilent", "25m", _firing("HomeclusterAutoscalerSilent", "critical")),
    ]),
    "autoscaler stopped calling": ([(BUILD_INFO, "1x60"), (REFRESH, "0+6x10 60x50")], [
        ("HomeclusterAutoscalerSilent", "15m", []),
        ("HomeclusterAutoscalerSilent", "35m", _firing("HomeclusterAutoscalerSilent", "critical")),
    ]),
}


def _expected(exp: list | tuple) -> list[dict]:
    if not exp:
        return []
    name, severity = exp
    return [{"exp_labels": {"severity": severity}, "exp_annotations": _annotations(name)}]


@pytest.fixture(scope="module")
def promtool():
    found = shutil.which("promtool")
    if found is None:
        pytest.fail("promtool is missing: scripts/system-deps.sh installs it (Debian's prometheus package)")
    return found


def test_the_rules_are_valid_for_prometheus(promtool, tmp_path):
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(yaml.safe_load(RULE.read_text())["spec"]))
    done = subprocess.run(["promtool", "check", "rules", str(tmp_path / "rules.yaml")], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("case", sorted(CASES))
def test_alerts_fire_on_recorded_series(promtool, tmp_path, case):
    series, expectations = CASES[case]
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(yaml.safe_load(RULE.read_text())["spec"]))
    (tmp_path / "test.yaml").write_text(yaml.safe_dump({
        "rule_files": ["rules.yaml"], "evaluation_interval": "1m",
        "tests": [{"interval": "1m", "input_series": [{"series": s, "values": v} for s, v in series],
                   "alert_rule_test": [{"alertname": name, "eval_time": at, "exp_alerts": _expected(exp)}
                                       for name, at, exp in expectations]}]}))
    done = subprocess.run(["promtool", "test", "rules", str(tmp_path / "test.yaml")], capture_output=True,
                          text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
