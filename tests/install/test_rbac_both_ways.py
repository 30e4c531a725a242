"""The two-way comparison the lab test uses (rbac_audit.rbac_both_ways): it catches what it claims to catch.

On hand-made request logs against a copy of config/ whose rules a test changes, so each way of going
wrong is shown to fail: a request no rule allows, a grant nothing used, an exemption that went stale,
and a wildcard. The real comparison, against the lab's log of a whole lifecycle, is
tests/integration/test_metrics_and_rbac.py.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from install_helpers import CONFIG
from rbac_audit import JOB_SA, MANAGER_SA, grants, rbac_both_ways, render, rules_for_service_account, wildcards

from homecluster_lab.apiserver.audit import AuditEntry

NS = "homecluster-system"
G = "infra.homecluster.dev"
JOB_AGENT = "OpenAPI-Generator/37.0.2/python"


def entry(verb: str, resource: str, group: str = "", namespace: str = "", name: str = "", sub: str = "",
          agent: str = JOB_AGENT) -> AuditEntry:
    return AuditEntry(verb=verb, resource=resource, group=group, namespace=namespace, name=name, subresource=sub,
                      user_agent=agent, time=0.0, code=200, rv="")


# everything homecluster-job is granted, once each, as a drain makes it
DRAIN = [entry("get", "nodes", name="w1"), entry("patch", "nodes", name="w1"), entry("list", "pods"),
         entry("create", "pods", namespace="apps", name="web-1", sub="eviction"),
         entry("get", "pods", namespace="apps", name="web-1")]


@pytest.fixture
def config_copy(tmp_path: Path) -> Path:
    """A copy of config/ (certs excluded) that a test may edit; returns the copy's default overlay."""
    shutil.copytree(CONFIG, tmp_path / "config", ignore=shutil.ignore_patterns("certs"))
    return tmp_path / "config" / "default"


def edit_job_role(config_default: Path, edit) -> None:
    path = config_default.parent / "rbac" / "job_role.yaml"
    role = yaml.safe_load(path.read_text())
    edit(role["rules"])
    path.write_text(yaml.safe_dump(role))


def test_a_drain_uses_every_job_grant_and_nothing_else(config_copy):
    result = rbac_both_ways(DRAIN + [entry("list", "nodes", agent="kubectl/v1.32")], JOB_SA, JOB_AGENT,
                            config_dir=config_copy)
    assert result.clean, result


def test_a_grant_nothing_used_is_reported(config_copy):
    edit_job_role(config_copy, lambda rules: rules.append({"apiGroups": [""], "resources": ["pods"],
                                                           "verbs": ["delete"]}))
    result = rbac_both_ways(DRAIN, JOB_SA, JOB_AGENT, config_dir=config_copy)
    assert result.idle == [("", "pods", "delete")] and not result.refused


def test_a_request_no_rule_allows_is_reported(config_copy):
    edit_job_role(config_copy, lambda rules: rules.remove(next(r for r in rules if r["resources"] == ["pods/eviction"])))
    result = rbac_both_ways(DRAIN, JOB_SA, JOB_AGENT, config_dir=config_copy)
    assert [str(r) for r in result.refused] == ["create pods/eviction (core) in namespace apps name=web-1"]


def test_an_exemption_for_a_used_or_missing_grant_is_stale(config_copy):
    exempt = {("", "nodes", "patch"): "pretend the lab cannot cordon", ("", "pods", "delete"): "never granted"}
    result = rbac_both_ways(DRAIN, JOB_SA, JOB_AGENT, exempt, config_dir=config_copy)
    assert result.stale == [("", "nodes", "patch"), ("", "pods", "delete")] and not result.clean


def test_an_exemption_covers_an_unused_grant(config_copy):
    without_patch = [e for e in DRAIN if e.verb != "patch"]
    assert rbac_both_ways(without_patch, JOB_SA, JOB_AGENT, config_dir=config_copy).idle == [("", "nodes", "patch")]
    assert rbac_both_ways(without_patch, JOB_SA, JOB_AGENT, {("", "nodes", "patch"): "why"},
                          config_dir=config_copy).clean


def test_the_manager_role_needs_a_namespace_for_jobs(config_copy):
    # a Job create outside the operator's namespace is refused (the Role binds only there)
    log = [entry("create", "jobs", "batch", "default", agent="homecluster-operator")]
    result = rbac_both_ways(log, MANAGER_SA, ("homecluster-operator", "kopf"), config_dir=config_copy)
    assert [str(r) for r in result.refused] == ["create jobs (batch) in namespace default"]


def test_wildcards_are_found_and_config_default_has_none(config_copy):
    objects = render(CONFIG / "default")
    for sa in (MANAGER_SA, JOB_SA):
        assert wildcards(rules_for_service_account(objects, *sa)) == []
    edit_job_role(config_copy, lambda rules: rules.append({"apiGroups": [""], "resources": ["*"], "verbs": ["get"]}))
    found = wildcards(rules_for_service_account(render(config_copy), *JOB_SA))
    assert found == ["ClusterRole/homecluster-job: wildcard resource in ['*']"]


def test_grants_expand_every_rule_once():
    objects = render(CONFIG / "default")
    expanded = grants(rules_for_service_account(objects, *JOB_SA))
    assert sorted(expanded) == sorted([("", "nodes", "get"), ("", "nodes", "patch"), ("", "pods", "get"),
                                       ("", "pods", "list"), ("", "pods/eviction", "create")])
