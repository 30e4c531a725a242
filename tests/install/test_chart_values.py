"""The chart's values as a newcomer meets them: values.schema.json refuses a key the chart does not know (a
typo) and names it, before anything renders; every value of values.yaml is in the schema and described by a
comment; charts/homecluster/README.md is generated from those comments and is fresh.

The schema is checked with jsonschema (draft 7, what helm uses) here, and with the built helm itself when it is
there (helm_or_skip); every `--set` the tests and the docs use must pass it, so the schema cannot refuse what the
chart is documented to take.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys

import jsonschema
import pytest
import yaml
from support.scripts import script

from helm_chart import CHART, FAKE_CA, helm
from install_helpers import REPO

SCHEMA = json.loads((CHART / "values.schema.json").read_text())
VALUES = yaml.safe_load((CHART / "values.yaml").read_text())
NOT_IN_VALUES = {"global", "certManager.enabled"}  # helm's own; the replaced switch the templates name
SET_SOURCES = [REPO / "tests" / "install" / "test_helm_chart.py", *sorted((REPO / "tests" / "k8s").glob("*helm*.py")),
               REPO / "tests" / "k8s" / "k8s_install_proof.py", *sorted((REPO / "docs").glob("*.md")),
               REPO / "README.md"]
SET = re.compile(r"""(?:--set[ =]+|["'])((?:image|namespace|certificates|certManager|webhook|jobNamespace|operator|"""
                 r"""resources|nodeSelector|tolerations|affinity|podAnnotations|priorityClassName|serviceMonitor|"""
                 r"""prometheusRule|aggregatedRoles|networkPolicy|autoscaler)[A-Za-z0-9_.]*)=([^"'\s`)]*)""")


SET_JSON = re.compile(r"""--set-json["'], ["']([A-Za-z][A-Za-z0-9_.]*)=(\{.*?\})["']""")


def errors(values: dict) -> list[str]:
    return [e.message for e in jsonschema.Draft7Validator(SCHEMA).iter_errors(values)]


def keys(node: dict, schema: dict, prefix: str = "") -> set[str]:
    """Dotted keys of `node`, not descending into maps the schema leaves free (resources, labels)."""
    found = set()
    for key, value in node.items():
        dotted = prefix + key
        found.add(dotted)
        sub = (schema.get("properties") or {}).get(key) or {}
        if isinstance(value, dict) and "properties" in sub:
            found |= keys(value, sub, dotted + ".")
    return found


def schema_keys(schema: dict, prefix: str = "") -> set[str]:
    found = set()
    for key, sub in (schema.get("properties") or {}).items():
        found.add(prefix + key)
        found |= schema_keys(sub, prefix + key + ".")
    return found


def with_set(dotted: str, raw: str) -> dict:
    value: object = {"true": True, "false": False}.get(raw, int(raw) if raw.isdigit() else raw)
    if raw.startswith("{") and raw.endswith("}"):
        value = [raw[1:-1]]
    doc = json.loads(json.dumps(VALUES))
    parts = dotted.split(".")
    node = doc
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = value
    return doc


def test_values_yaml_passes_its_schema_and_they_list_the_same_keys():
    assert errors(VALUES) == []
    assert keys(VALUES, SCHEMA) == schema_keys(SCHEMA) - NOT_IN_VALUES, (
        f"only in values.yaml: {sorted(keys(VALUES, SCHEMA) - schema_keys(SCHEMA))}; only in values.schema.json: "
        f"{sorted(schema_keys(SCHEMA) - NOT_IN_VALUES - keys(VALUES, SCHEMA))}")


def test_a_typo_is_refused_naming_the_key():
    assert errors(with_set("imagee.tag", "1.0")) == ["Additional properties are not allowed ('imagee' was unexpected)"]
    assert any("'repositry' was unexpected" in e for e in errors(with_set("image.repositry", "x")))
    assert any("'Sometimes' is not one of" in e for e in errors(with_set("webhook.failurePolicy", "Sometimes")))


def test_every_set_the_tests_and_docs_use_passes_the_schema():
    seen = set()
    for path in SET_SOURCES:
        text = path.read_text()
        for dotted, raw in SET_JSON.findall(text):
            doc = with_set(dotted, "x")
            node = doc
            for part in dotted.split(".")[:-1]:
                node = node[part]
            node[dotted.split(".")[-1]] = json.loads(raw)
            seen.add(dotted)
            assert errors(doc) == [], f"{path.name}: --set-json {dotted}={raw}"
        for dotted, raw in SET.findall(SET_JSON.sub("", text)):
            if "{" in raw and not raw.startswith("{--"):
                raw = "x"  # an f-string's value
            if dotted == "certManager.enabled":
                continue  # refused by the templates with their own message (test_helm_chart.py)
            if dotted == "certificates.mod":
                continue  # README.md's typo, refused on purpose (tests/k8s/test_k8s_helm_walk.py)
            seen.add(dotted)
            assert errors(with_set(dotted, raw)) == [], f"{path.name}: --set {dotted}={raw}"
    assert {"certificates.mode", "webhook.caBundle", "operator.extraArgs", "prometheusRule.labels.release"} <= seen


def test_helm_refuses_a_typo_naming_the_key():
    done = helm("template", "homecluster", str(CHART), "--set", "imagee.tag=1.0", "--set", f"webhook.caBundle={FAKE_CA}")
    assert done.returncode != 0 and "imagee" in done.stderr, done.stderr
    assert "values don't meet the specifications of the schema" in done.stderr, done.stderr


def test_the_readme_is_generated_from_the_values_comments_and_fresh():
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "chart-readme.py"), "--check"], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    readme = (CHART / "README.md").read_text()
    rows = re.findall(r"^\| `([^`]+)` \| ([^|]*) \| (.*) \|$", readme, re.M)
    assert {key for key, _, _ in rows} == keys(VALUES, SCHEMA)
    undescribed = [key for key, _, text in rows if not text.strip()]
    assert undescribed == [], f"values.yaml has no comment above {undescribed}"
    assert "always on" in readme, "the placement advice: the operator and the autoscaler on an always-on node"


def test_a_stale_readme_is_caught(tmp_path, monkeypatch):
    readme_script = script("chart-readme")
    text = readme_script.render(CHART / "values.yaml")
    assert "| `operator.logLevel` | `\"\"` | DEBUG, INFO or WARNING; empty: INFO. |" in text
    monkeypatch.setattr(readme_script, "CHART", tmp_path)
    (tmp_path / "values.yaml").write_text((CHART / "values.yaml").read_text().replace("DEBUG, INFO or WARNING",
                                                                                        "DEBUG or INFO"))
    (tmp_path / "values.schema.json").write_text((CHART / "values.schema.json").read_text())
    (tmp_path / "README.md").write_text((CHART / "README.md").read_text())
    assert readme_script.main(["--check"]) == 1
    assert readme_script.main([]) == 0 and readme_script.main(["--check"]) == 0
