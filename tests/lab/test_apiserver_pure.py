"""Pure parts of the lab API server: patches, selectors, JSONPath, ages, PDB arithmetic, webhook rules."""
from __future__ import annotations

import pytest

from homecluster_lab.apiserver import disruption, jsonpath, meta, patches, selectors
from homecluster_lab.apiserver.admission import AdmissionRequest, rule_matches
from homecluster_lab.apiserver.errors import APIError
from homecluster_lab.apiserver.resources import builtin_types


def test_json_patch_ops_and_failed_test():
    doc = {"a": {"b": [1, 2]}, "c": "x"}
    out = patches.json_patch(doc, [{"op": "add", "path": "/a/b/-", "value": 3},
                                   {"op": "replace", "path": "/c", "value": "y"},
                                   {"op": "move", "from": "/c", "path": "/d"},
                                   {"op": "copy", "from": "/d", "path": "/e~1f"},
                                   {"op": "remove", "path": "/a/b/0"},
                                   {"op": "test", "path": "/d", "value": "y"}])
    assert out == {"a": {"b": [2, 3]}, "d": "y", "e/f": "y"}
    assert doc == {"a": {"b": [1, 2]}, "c": "x"}  # untouched
    with pytest.raises(patches.PatchError):
        patches.json_patch(doc, [{"op": "test", "path": "/c", "value": "nope"}])
    with pytest.raises(patches.PatchError):
        patches.json_patch(doc, [{"op": "remove", "path": "/missing"}])


def test_merge_patch_deletes_with_null():
    assert patches.merge_patch({"a": 1, "b": {"c": 2, "d": 3}}, {"a": None, "b": {"c": None, "e": 4}}) == \
        {"b": {"d": 3, "e": 4}}


def test_strategic_merge_lists_and_directives():
    node = {"metadata": {"finalizers": ["a"]},
            "status": {"conditions": [{"type": "Ready", "status": "False"}, {"type": "Disk", "status": "False"}]},
            "spec": {"taints": [{"key": "x", "effect": "NoSchedule"}]}}
    out = patches.strategic_merge(node, {
        "metadata": {"finalizers": ["b"]},
        "status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "Disk", "$patch": "delete"}],
                   "$setElementOrder/conditions": [{"type": "Ready"}]},
        "spec": {"taints": [{"key": "y", "effect": "NoExecute"}]}})
    assert out["metadata"]["finalizers"] == ["a", "b"]
    assert out["status"]["conditions"] == [{"type": "Ready", "status": "True"}]
    assert out["spec"]["taints"] == [{"key": "y", "effect": "NoExecute"}]  # taints replace, as upstream
    out = patches.strategic_merge(out, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]},
                                        "spec": {"$retainKeys": ["unschedulable"], "unschedulable": True}})
    assert out["metadata"]["finalizers"] == ["b"] and out["spec"] == {"unschedulable": True}


def test_strategic_merge_of_a_webhook_configuration_merges_webhooks_by_name():
    """As the real API server (patchMergeKey name): a caBundle patch keeps each webhook's other fields."""
    vwc = {"webhooks": [{"name": "a", "clientConfig": {"service": {"name": "svc"}}, "failurePolicy": "Fail"},
                        {"name": "b", "clientConfig": {"url": "https://x"}}]}
    out = patches.strategic_merge(vwc, {"webhooks": [{"name": "a", "clientConfig": {"caBundle": "Q0E="}}]})
    assert out["webhooks"] == [
        {"name": "a", "clientConfig": {"service": {"name": "svc"}, "caBundle": "Q0E="}, "failurePolicy": "Fail"},
        {"name": "b", "clientConfig": {"url": "https://x"}}]


def test_label_selector_grammar():
    reqs = selectors.parse_label_selector("a=1,b!=2,c in (x, y),d notin (z),e,!f")
    assert [r.op for r in reqs] == ["=", "!=", "in", "notin", "exists", "!exists"]
    obj = {"metadata": {"labels": {"a": "1", "c": "y", "e": ""}}}
    assert selectors.labels_match(reqs, obj)
    assert not selectors.labels_match(selectors.parse_label_selector("c notin (y)"), obj)
    with pytest.raises(APIError):
        selectors.parse_label_selector("a b c")


def test_field_selector_values():
    obj = {"metadata": {"name": "p"}, "spec": {"nodeName": "n1", "unschedulable": True}}
    assert selectors.fields_match(selectors.parse_field_selector("spec.nodeName=n1,metadata.name==p"), obj)
    assert selectors.fields_match(selectors.parse_field_selector("spec.unschedulable=true"), obj)
    assert not selectors.fields_match(selectors.parse_field_selector("spec.nodeName!=n1"), obj)
    assert selectors.fields_match(selectors.parse_field_selector("status.phase="), obj)


def test_jsonpath_printer_columns():
    obj = {"status": {"conditions": [{"type": "A", "status": "False"}, {"type": "Ready", "status": "True"}]},
           "spec": {"items": [{"n": 1}, {"n": 2}], "dotted.key": "v"}}
    assert jsonpath.evaluate(obj, '.status.conditions[?(@.type=="Ready")].status') == ["True"]
    assert jsonpath.evaluate(obj, ".spec.items[*].n") == [1, 2]
    assert jsonpath.evaluate(obj, ".spec.items[1].n") == [2]
    assert jsonpath.evaluate(obj, ".spec['dotted.key']") == ["v"]
    assert jsonpath.evaluate(obj, ".spec.missing") == []


@pytest.mark.parametrize("seconds,shown", [(5, "5s"), (119, "119s"), (150, "2m30s"), (600, "10m"),
                                           (3 * 3600 + 60, "3h1m"), (9 * 3600, "9h"), (50 * 3600, "2d2h"),
                                           (10 * 86400, "10d"), (-5, "<invalid>")])
def test_human_duration(seconds, shown):
    assert meta.human_duration(seconds) == shown


def _pod(name, ready=True, phase="Running", owner=None):
    md = {"name": name, "namespace": "d", "labels": {"app": "w"}}
    if owner:
        md["ownerReferences"] = [{"uid": owner, "controller": True}]
    return {"metadata": md, "status": {"phase": phase,
                                       "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def test_pdb_budget_percentages_and_scale():
    pdb = {"metadata": {"name": "b", "namespace": "d", "generation": 1},
           "spec": {"maxUnavailable": "50%", "selector": {"matchLabels": {"app": "w"}}}}
    pods = [_pod("a", owner="rs"), _pod("b", owner="rs"), _pod("c", ready=False, owner="rs")]
    b = disruption.budget(pdb, pods, lambda uid: 4)
    assert (b.expected, b.current_healthy, b.desired_healthy, b.disruptions_allowed) == (4, 2, 2, 0)
    assert disruption.eviction_verdict(pods[0], [pdb], pods, lambda uid: 4)[0] == "deny"
    assert disruption.eviction_verdict(pods[2], [pdb], pods, lambda uid: 4)[0] == "allow"  # unhealthy, budget met
    assert disruption.eviction_verdict(pods[0], [pdb, pdb], pods)[0] == "error"


def test_webhook_rules():
    pods = next(rt for rt in builtin_types() if rt.plural == "pods")
    req = AdmissionRequest(pods, "v1", "eviction", "CREATE", "d", "p", {}, None, False, "u", {})
    rule = {"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}
    assert not rule_matches(rule, req)  # a subresource must be named
    assert rule_matches({**rule, "resources": ["pods/eviction"]}, req)
    assert rule_matches({**rule, "resources": ["*/*"]}, req)
    assert not rule_matches({**rule, "operations": ["UPDATE"], "resources": ["*/*"]}, req)
