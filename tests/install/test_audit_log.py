"""tests/install/audit_log.py on lines captured from kube-apiserver 1.35's audit log (audit_sample.jsonl: a
lifecycle on the lab's real control plane, `--audit-log-format=json`): each way of judging a log is shown
to catch what it claims to catch. The judgement of a whole lifecycle's log is
tests/k8s/test_k8s_integration.py::test_rbac_both_ways_on_the_real_audit_log.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import audit_log
from audit_log import Event, both_ways, never_made, parse, refused, service_account_user
from install_helpers import CONFIG
from rbac_audit import JOB_SA, MANAGER_SA, Request, render, rules_for_service_account

SAMPLE = (Path(__file__).parent / "audit_sample.jsonl").read_text().splitlines()
OPERATOR, JOB = service_account_user(MANAGER_SA), service_account_user(JOB_SA)
NS = "homecluster-system"


def with_code(line: str, code: int) -> str:
    """A captured line with another response code (and its own auditID): a refusal as the server logs it."""
    raw = json.loads(line)
    raw["responseStatus"]["code"] = code
    raw["auditID"] += "-refused"
    return json.dumps(raw)


def test_lines_read_as_rbac_sees_them():
    events = parse(SAMPLE)
    assert len(events) == len(SAMPLE)
    eviction = next(e for e in events if e.subresource == "eviction")
    assert eviction == Event(user=JOB, verb="create", uri="/api/v1/namespaces/default/pods/web-0/eviction", code=201,
                             user_agent=eviction.user_agent, group="", resource="pods", subresource="eviction",
                             namespace="default", name="web-0")
    assert eviction.request == Request("create", "", "pods", "eviction", "default", "web-0")
    status = next(e for e in events if e.subresource == "status")
    assert (status.user, status.group, status.request.verb, status.namespace) == (
        OPERATOR, "infra.homecluster.dev", "patch", "")
    discovery = next(e for e in events if e.uri == "/api")
    assert discovery.request is None  # a non-resource URL: no RBAC resource rule is about it
    assert service_account_user(("homecluster-job", NS)) == f"system:serviceaccount:{NS}:homecluster-job"


def test_a_watch_logged_when_it_starts_and_when_it_ends_is_one_request():
    watch = next(line for line in SAMPLE if '"verb":"watch"' in line)
    ended = json.loads(watch)
    ended["stage"] = "ResponseComplete"
    events = parse([watch, json.dumps(ended)])
    assert [(e.verb, e.resource) for e in events] == [("watch", "jobs")]


def test_a_line_that_is_not_an_audit_event_is_an_error():
    with pytest.raises(ValueError, match="line 2 is not an audit Event"):
        parse([SAMPLE[0], '{"kind": "Status"}'])


def test_a_last_line_still_being_written_is_skipped_a_torn_line_before_it_is_an_error():
    torn = SAMPLE[1][:len(SAMPLE[1]) // 2]
    assert len(parse([SAMPLE[0], torn])) == 1
    assert len(parse([SAMPLE[0], torn, ""])) == 1
    with pytest.raises(ValueError, match="line 2 is not JSON"):
        parse([SAMPLE[0], torn, SAMPLE[2]])


def test_refusals_are_found_by_user():
    pods_get = next(line for line in SAMPLE if '"verb":"get"' in line and "pods/web-0" in line)
    events = parse(SAMPLE + [with_code(pods_get, 403)])
    assert [e.request for e in refused(events, JOB)] == [Request("get", "", "pods", namespace="default", name="web-0")]
    assert refused(events, OPERATOR) == []
    result = both_ways(events, JOB, rules_for_service_account(render(CONFIG / "rbac"), *JOB_SA))
    assert result.refused == [Request("get", "", "pods", namespace="default", name="web-0")]


def test_both_ways_reports_idle_and_stale_grants():
    events = parse(SAMPLE)
    rules = rules_for_service_account(render(CONFIG / "rbac"), *JOB_SA)
    # the sample's Job pod evicted and read a pod, but did not read or patch its node, nor list pods
    result = both_ways(events, JOB, rules)
    assert result.refused == [] and result.stale == []
    assert result.idle == [("", "nodes", "get"), ("", "nodes", "patch"), ("", "pods", "list")]
    exempt = {("", "nodes", "get"): "why", ("", "nodes", "patch"): "why", ("", "pods", "list"): "why",
              ("", "pods/eviction", "create"): "used after all", ("", "secrets", "get"): "never granted"}
    result = both_ways(events, JOB, rules, exempt)
    assert result.idle == []
    assert result.stale == [("", "pods/eviction", "create"), ("", "secrets", "get")]


def test_requests_that_must_never_be_made_are_found_whatever_the_answer():
    events = parse(SAMPLE)
    assert never_made(events, JOB, [Request("*", "", "secrets"), Request("delete", "", "pods")]) == []
    found = never_made(events, JOB, [Request("create", "", "pods", "eviction")])
    assert [e.uri for e in found] == ["/api/v1/namespaces/default/pods/web-0/eviction"]
    # any verb, any resource of a group; the subresource must match
    assert [e.request.resource for e in never_made(events, OPERATOR, [Request("*", "infra.homecluster.dev", "*")])] \
        == ["nodeclaims"]  # the list; the status patch is a subresource
    assert audit_log.matches(Request("*", "", "pods"), Request("get", "", "pods", namespace="x", name="y"))
    assert not audit_log.matches(Request("get", "", "pods"), Request("get", "", "pods", "log"))
