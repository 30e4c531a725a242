"""homecluster_lab.crdcheck.openapi: defaulting, pruning, validation and the API server's wording."""
from __future__ import annotations

import copy

import pytest

from homecluster.api.crd import all_crds
from homecluster_lab.crdcheck.errors import FieldError, aggregate, go_value
from homecluster_lab.crdcheck.openapi import apply_defaults, crd_schema, invalid_message, prune, validate

GROUP = crd_schema(all_crds()["Group"])
NODE = crd_schema(all_crds()["Node"])
CLAIM = crd_schema(all_crds()["NodeClaim"])


def _group(**spec) -> dict:
    base = {"maxSize": 3, "template": {"capacity": {"cpu": "4", "memory": "16Gi", "pods": 110}}}
    return {"apiVersion": "infra.homecluster.dev/v2alpha1", "kind": "Group", "metadata": {"name": "g"},
            "spec": {**base, **spec}}


def _claim(**spec) -> dict:
    return {"apiVersion": "infra.homecluster.dev/v2alpha1", "kind": "NodeClaim", "metadata": {"name": "c"},
            "spec": {"slotRef": "worker-01", **spec}}


def _ipmi_node(**ipmi) -> dict:
    block = {"address": "10.0.0.1", "credentialsSecretRef": {"name": "bmc"}, **ipmi}
    return {"apiVersion": "infra.homecluster.dev/v2alpha1", "kind": "Node", "metadata": {"name": "n"},
            "spec": {"groupRef": "g", "power": {"method": "ipmi", "ipmi": block}}}


def _strs(errors: list[FieldError]) -> list[str]:
    return [str(e) for e in errors]


# ---------------------------------------------------------------- wording

def test_field_error_strings_match_the_api_server():
    assert str(FieldError("spec.power.method", "Unsupported value", 'supported values: "ipmi", "redfish", "wol"',
                          "pxe", "FieldValueNotSupported")) == \
        'spec.power.method: Unsupported value: "pxe": supported values: "ipmi", "redfish", "wol"'
    assert str(FieldError("spec.slotRef", "Required value", "", None, "FieldValueRequired")) == \
        "spec.slotRef: Required value"
    assert str(FieldError("spec.maxSize", "Invalid value", "spec.maxSize in body should be greater than or equal to 0",
                          -1)) == "spec.maxSize: Invalid value: -1: spec.maxSize in body should be greater than or equal to 0"


BLOCKED_NOTE = ("<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; "
                "correct the existing errors to complete validation")


def test_go_value_formatting():
    # nil prints as json.Marshal renders it (kube-apiserver 1.35: `<nil>: Invalid value: null: ...`)
    assert [go_value(v) for v in (None, True, 3, 1.0, 0.7, "a\"b")] == ["null", "true", "3", "1", "0.7", '"a\\"b"']


def test_invalid_message_one_and_several_errors():
    one = validate(_group(minSize=-1), GROUP)
    assert invalid_message("Group", "x", one) == ('Group.infra.homecluster.dev "x" is invalid: '
                                                  "spec.minSize: Invalid value: -1: spec.minSize in body should be "
                                                  "greater than or equal to 0")
    obj = _group(maxSize=-1, minSize=-2)
    several = validate(obj, GROUP)
    assert invalid_message("Group", "g", several) == (
        'Group.infra.homecluster.dev "g" is invalid: ['
        "spec.maxSize: Invalid value: -1: spec.maxSize in body should be greater than or equal to 0, "
        "spec.minSize: Invalid value: -2: spec.minSize in body should be greater than or equal to 0]")
    assert invalid_message("Group.infra.homecluster.dev", "g", one).startswith('Group.infra.homecluster.dev "g"')
    assert aggregate(one + one) == str(one[0])  # duplicates once, like utilerrors
    # a missing required field blocks the CEL rules, as the real server's hasBlockingErr does
    missing = validate(_claim(slotRef=None) | {"spec": {}}, CLAIM)
    assert invalid_message("NodeClaim", "x", missing) == (
        'NodeClaim.infra.homecluster.dev "x" is invalid: [spec.slotRef: Required value, <nil>: Invalid value: null: '
        "some validation rules were not checked because the object was invalid; correct the existing errors to "
        "complete validation]")


def test_errors_carry_status_cause_reasons():
    errors = validate({"spec": {"groupRef": "g", "power": {"method": "pxe"}}}, NODE)
    assert errors[0].reason == "FieldValueNotSupported" and errors[0].path == "spec.power.method"
    assert validate({"spec": {}}, CLAIM)[0].reason == "FieldValueRequired"


# ---------------------------------------------------------------- defaults

def test_defaults_fill_absent_fields_recursively_without_touching_the_input():
    obj = _ipmi_node()
    before = copy.deepcopy(obj)
    out = apply_defaults(obj, NODE)
    assert obj == before
    assert out["spec"]["power"]["ipmi"]["port"] == 623
    wol = apply_defaults({"spec": {"power": {"method": "wol", "wol": {"macAddress": "52:54:00:00:00:01"},
                                             "ssh": {"host": "h", "credentialsSecretRef": {"name": "k"}}}}}, NODE)
    assert wol["spec"]["power"]["wol"] == {"macAddress": "52:54:00:00:00:01", "broadcastAddress": "255.255.255.255",
                                           "port": 9}
    assert wol["spec"]["power"]["ssh"] | {} == {"host": "h", "credentialsSecretRef": {"name": "k"}, "port": 22,
                                                "user": "root", "command": "poweroff"}
    group = apply_defaults(_group(), GROUP)
    assert (group["spec"]["minSize"], group["spec"]["ttlSecondsAfterFinished"]) == (0, 600)


def test_defaults_keep_given_values_and_replace_nulls():
    out = apply_defaults(_ipmi_node(port=6230), NODE)
    assert out["spec"]["power"]["ipmi"]["port"] == 6230
    nulls = apply_defaults(_ipmi_node(port=None) | {}, NODE)
    assert nulls["spec"]["power"]["ipmi"]["port"] == 623
    dropped = apply_defaults(_claim(deadlineAt=None), CLAIM)
    assert "deadlineAt" not in dropped["spec"]


# ---------------------------------------------------------------- pruning

def test_prune_drops_unknown_fields_and_keeps_the_envelope():
    obj = _claim(color="blue")
    obj["metadata"]["labels"] = {"a": "b"}
    obj["status"] = {"phase": "ready", "progress": "old v1alpha1 field"}
    out = prune(obj, CLAIM)
    assert "color" not in out["spec"] and out["spec"]["slotRef"] == "worker-01"
    assert out["status"] == {"phase": "ready"}
    assert out["metadata"] == {"name": "c", "labels": {"a": "b"}}
    assert "color" in obj["spec"]  # the input is not modified
    bare = prune({"spec": {"slotRef": "x", "junk": 1}}, CLAIM)
    assert bare == {"spec": {"slotRef": "x"}}


def test_prune_keeps_map_entries_and_respects_preserve_unknown_fields():
    out = prune(_group(), GROUP)
    assert out["spec"]["template"]["capacity"] == {"cpu": "4", "memory": "16Gi", "pods": 110}
    schema = {"type": "object", "properties": {
        "open": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                 "properties": {"known": {"type": "object", "properties": {"a": {"type": "string"}}}}},
        "embedded": {"type": "object", "x-kubernetes-embedded-resource": True, "properties": {}}}}
    obj = {"open": {"anything": [1, 2], "known": {"a": "x", "b": "dropped"}},
           "embedded": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}}, "gone": 1}
    assert prune(obj, schema) == {"open": {"anything": [1, 2], "known": {"a": "x"}},
                                  "embedded": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}}


# ---------------------------------------------------------------- validation

def test_type_errors_block_the_cel_rules_like_the_api_server():
    errors = _strs(validate(_group(maxSize="three"), GROUP))
    assert errors == [
        'spec.maxSize: Invalid value: "string": spec.maxSize in body must be of type integer: "string"',
        '<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; '
        "correct the existing errors to complete validation",
    ]


def test_booleans_are_not_integers_and_integers_are_numbers():
    assert _strs(validate(_group(minSize=True), GROUP))[0] == \
        'spec.minSize: Invalid value: "boolean": spec.minSize in body must be of type integer: "boolean"'
    assert validate(_group(pricing={"energyPricePerKWh": 1}), GROUP) == []
    assert validate(_ipmi_node() | {"spec": {**_ipmi_node()["spec"], "powerDrawWatts": 35.5}}, NODE) == []


def test_null_in_a_non_nullable_field():
    assert _strs(validate(_claim(requestedBy=None), CLAIM))[0] == \
        'spec.requestedBy: Invalid value: "null": spec.requestedBy in body must be of type string: "null"'


def test_date_time_format():
    assert validate(_claim(requestedAt="2026-03-04T09:38:15Z", deadlineAt="2026-03-04T10:50:25.5+01:00"), CLAIM) == []
    for bad in ("2026-03-04", "2026-13-04T09:38:15Z", "2026-03-04T09:38:15", "yesterday"):
        errors = _strs(validate(_claim(requestedAt=bad), CLAIM))
        # a format error is a type error (FieldValueTypeInvalid) in kube-openapi: CEL rules then do not run,
        # and kube-apiserver says so (tests/k8s/test_k8s_admission_agreement.py compares with it)
        assert errors == [f'spec.requestedAt: Invalid value: "{bad}": spec.requestedAt in body must be of type '
                          f'date-time: "{bad}"', "<nil>: Invalid value: null: some validation rules were not checked "
                          "because the object was invalid; correct the existing errors to complete validation"]


def test_quantities_are_int_or_string_with_a_pattern():
    ok = _group(template={"capacity": {"cpu": 8, "memory": "32Gi", "pods": "110", "gpu": "500m"}})
    assert validate(ok, GROUP) == []
    bad_type = _strs(validate(_group(template={"capacity": {"cpu": True, "memory": "1Gi", "pods": 1}}), GROUP))
    assert bad_type[0] == ('spec.template.capacity.cpu: Invalid value: "boolean": spec.template.capacity.cpu in body '
                           'must be of type integer,string: "boolean"')
    bad_text = _strs(validate(_group(template={"capacity": {"cpu": 1, "memory": "32 GB", "pods": 1}}), GROUP))
    assert len(bad_text) == 1
    assert bad_text[0].startswith('spec.template.capacity.memory: Invalid value: "32 GB": '
                                  "spec.template.capacity.memory in body should match '^")


def test_lengths_and_list_sizes():
    long_ref = "x" * 254
    # too long blocks the CEL rules (the real server's hasBlockingErr); a schema without rules notes nothing
    assert _strs(validate(_claim(slotRef=long_ref), CLAIM)) == ["spec.slotRef: Too long: may not be more than 253 bytes",
                                                                BLOCKED_NOTE]
    assert _strs(validate(_claim(slotRef=""), CLAIM)) == [
        'spec.slotRef: Invalid value: "": spec.slotRef in body should be at least 1 chars long']
    schema = {"type": "object", "properties": {"xs": {"type": "array", "maxItems": 2, "minItems": 1,
                                                      "items": {"type": "string"}}}}
    assert _strs(validate({"xs": ["a", "b", "c"]}, schema)) == ["xs: Too many: 3: must have at most 2 items"]
    assert _strs(validate({"xs": []}, schema)) == ["xs: Invalid value: 0: xs in body should have at least 1 items"]


def test_condition_types_are_unique():
    conditions = [{"type": "Ready", "status": "True"}, {"type": "Booted", "status": "True"},
                  {"type": "Ready", "status": "False"}]
    errors = _strs(validate(_claim() | {"status": {"conditions": conditions}}, CLAIM))
    assert errors == ['status.conditions[2]: Duplicate value: {"type":"Ready"}']
    missing = _strs(validate(_claim() | {"status": {"conditions": [{"status": "Maybe"}]}}, CLAIM))
    assert "status.conditions[0].type: Required value" in missing
    assert 'status.conditions[0].status: Unsupported value: "Maybe": supported values: "True", "False", "Unknown"' \
        in missing


def test_nested_list_paths():
    obj = _group(template={"capacity": {"cpu": "1", "memory": "1Gi", "pods": 10},
                           "taints": [{"key": "a", "effect": "NoSchedule"}, {"key": "", "effect": "NoSchedule"}]})
    assert _strs(validate(obj, GROUP)) == [
        'spec.template.taints[1].key: Invalid value: "": spec.template.taints[1].key in body should be at least 1 '
        "chars long"]


# ---------------------------------------------------------------- CEL

def test_slot_ref_is_immutable_on_update_only():
    old = _claim()
    assert validate(_claim(), CLAIM, old=old) == []
    assert validate(_claim(slotRef="worker-02"), CLAIM) == []  # a create has no oldSelf
    errors = validate(_claim(slotRef="worker-02"), CLAIM, old=old)
    # a failed rule on a scalar shows the value itself (kube-apiserver 1.35)
    assert _strs(errors) == ['spec.slotRef: Invalid value: "worker-02": spec.slotRef is immutable: delete this claim '
                             "and create a new one for the other slot"]
    assert errors[0].reason == "FieldValueInvalid"
    # other spec fields may change (the readiness gate clears deadlineAt)
    assert validate(_claim(), CLAIM, old=_claim(deadlineAt="2026-03-04T09:50:25Z")) == []


def test_min_size_against_max_size():
    assert validate(_group(minSize=3, maxSize=3), GROUP) == []
    assert validate(_group(maxSize=0), GROUP) == []
    assert _strs(validate(_group(minSize=4, maxSize=3), GROUP)) == [
        # as kube-apiserver 1.35 words it: a failed rule on an object shows no value (field.OmitValueType)
        'spec: Invalid value: spec.minSize must be less than or equal to spec.maxSize']


@pytest.mark.parametrize("power, missing", [
    ({"method": "ipmi"}, ["ipmi"]),
    ({"method": "redfish"}, ["redfish"]),
    ({"method": "wol"}, ["wol", "ssh"]),
    ({"method": "wol", "wol": {"macAddress": "52:54:00:00:00:01"}}, ["ssh"]),
])
def test_power_method_requires_its_settings(power, missing):
    errors = validate({"spec": {"groupRef": "g", "power": power}}, NODE)
    assert _strs(errors) == [f"spec.power.{m}: Required value: spec.power.{m} is required when spec.power.method is "
                             f"{power['method']}" for m in missing]
    assert all(e.reason == "FieldValueRequired" for e in errors)


def test_rule_that_cannot_evaluate_is_reported_not_raised():
    schema = {"type": "object", "properties": {"a": {"type": "integer"}},
              "x-kubernetes-validations": [{"rule": "self.a > 1", "message": "a must exceed 1"}]}
    assert _strs(validate({"a": 5}, schema)) == []
    assert _strs(validate({"a": 0}, schema)) == ['<nil>: Invalid value: a must exceed 1']
    (error,) = validate({}, schema)
    assert "evaluating rule: a must exceed 1" in str(error)  # the message, as kube-apiserver's ruleErrorString
    schema["x-kubernetes-validations"][0].pop("message")
    (error,) = validate({}, schema)
    assert "evaluating rule: self.a > 1" in str(error)  # the rule, when it has no message


def test_transition_rules_correlate_map_list_items_by_key():
    schema = {"type": "object", "properties": {"items": {
        "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
        "items": {"type": "object", "required": ["name"], "properties": {
            "name": {"type": "string"},
            "size": {"type": "integer", "x-kubernetes-validations": [
                {"rule": "self >= oldSelf", "message": "size may only grow"}]}}}}}}
    old = {"items": [{"name": "a", "size": 5}, {"name": "b", "size": 1}]}
    new = {"items": [{"name": "b", "size": 2}, {"name": "a", "size": 4}, {"name": "c", "size": 0}]}
    assert _strs(validate(new, schema, old)) == ['items[1].size: Invalid value: 4: size may only grow']
