"""The alerts (config/components/prometheus-rule; the chart and docs/metrics.md carry the same rules, as
test_components.py and test_helm_chart.py check) as an on-call person meets them: each has a severity and a
runbook_url whose section of docs/common-issues.md exists, and the operator-down and autoscaler-silent alerts
fire when the series are missing, proven with `promtool test rules` (Prometheus's own rule engine) on
recorded series.
"""
from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys

import pytest
import yaml
from support.scripts import script

from install_helpers import REPO

RULE = REPO / "config" / "components" / "prometheus-rule" / "prometheus-rule.yaml"
ISSUES = REPO / "docs" / "common-issues.md"
RUNBOOKS = "https://github.com/homecluster-dev/homecluster/blob/main/docs/common-issues.md#"
SEVERITIES = {"critical", "warning"}


DRILL = script("alert-drill")  # its recorded cases and promtool's test files
rules = DRILL.rules


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


@pytest.mark.parametrize("case", sorted(DRILL.CASES))
def test_alerts_fire_on_recorded_series(promtool, tmp_path, case):
    test = DRILL.write(tmp_path, case)
    done = subprocess.run([promtool, "test", "rules", test.name], capture_output=True, text=True, timeout=60,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_readmes_drill_shows_operator_down_firing_when_the_series_disappear(promtool):
    """README.md's command, run as written: the operator's series gone at 10m, HomeclusterOperatorDown firing."""
    (line,) = [ln.strip() for ln in (REPO / "README.md").read_text().splitlines() if "scripts/alert-drill.py" in ln
               and not ln.startswith("|")]
    command = shlex.split(line, comments=True)
    assert command[0] == ".venv/bin/python", line
    done = subprocess.run([sys.executable, *command[1:]], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "operator goes away: HomeclusterOperatorDown is quiet at 9m; HomeclusterOperatorDown fires (critical) " \
           "at 25m" in done.stdout and "promtool: as expected" in done.stdout, done.stdout


def test_the_drill_says_so_when_promtool_disagrees(promtool, monkeypatch, capsys):
    monkeypatch.setitem(DRILL.CASES, "wrong", ([(DRILL.BUILD_INFO, "1x40")], [("HomeclusterOperatorDown", "30m",
                                                                                "critical")]))
    assert DRILL.main(["wrong"]) == 1
    assert "NOT as expected" in capsys.readouterr().out
