"""model/gate.py: the readiness gate's and the cordon's Node patches, as pure functions of the Node read.

The same rule through real passes on the lab API server: tests/lifecycle/boot/test_gate_and_cordon_patches.py."""
from __future__ import annotations

from homecluster import names
from homecluster.model.gate import cordon_patch, gate_patch, machine_of, mark_patch

SLOT = "worker-01"
OURS = {names.ANNOTATION_CORDONED_BY: names.CORDONED_BY_VALUE}
TO_BE_DELETED = {"key": names.CA_TO_BE_DELETED, "value": "1700000000", "effect": "NoSchedule"}
CANDIDATE = {"key": names.CA_TAINTS[1], "value": "1700000000", "effect": "PreferNoSchedule"}
STARTUP = {"key": "example.com/not-ready", "effect": "NoSchedule"}


def node(*, unschedulable=False, annotations=None, taints=None, provider_id=f"{names.PROVIDER_ID_SCHEME}{SLOT}",
         machine_of=SLOT, rv="7"):
    metadata = {"name": SLOT, "resourceVersion": rv, "labels": {names.LABEL_MACHINE_OF: machine_of} if machine_of
                else {"kubernetes.io/hostname": SLOT}}
    if annotations is not None:
        metadata["annotations"] = annotations
    spec = {"providerID": provider_id} if provider_id else {}
    if unschedulable:
        spec["unschedulable"] = True
    if taints is not None:
        spec["taints"] = taints
    return {"apiVersion": "v1", "kind": "Node", "metadata": metadata, "spec": spec}


def test_a_usable_node_marked_as_ours_needs_nothing():
    assert gate_patch(node(), SLOT) is None
    assert gate_patch(node(taints=[STARTUP]), SLOT) is None  # another's taint is never ours to lift


def test_the_gate_lifts_our_own_cordon_and_its_mark():
    assert gate_patch(node(unschedulable=True, annotations=OURS), SLOT) == {
        "metadata": {"annotations": {names.ANNOTATION_CORDONED_BY: None}, "resourceVersion": "7"},
        "spec": {"unschedulable": False}}


def test_a_cordon_that_is_not_ours_stays_unless_the_autoscaler_left_it_at_boot():
    assert gate_patch(node(unschedulable=True), SLOT) is None
    assert gate_patch(node(unschedulable=True, taints=[TO_BE_DELETED]), SLOT, boot=False) is None
    assert gate_patch(node(unschedulable=True, taints=[TO_BE_DELETED, STARTUP]), SLOT) == {
        "metadata": {"resourceVersion": "7"}, "spec": {"unschedulable": False, "taints": [STARTUP]}}


def test_at_boot_only_the_to_be_deleted_taint_shows_a_cordon_is_the_autoscalers():
    """A cordon that is not ours stays at boot when the Node carries no ToBeDeletedByClusterAutoscaler: another's
    taint, or the autoscaler's mere DeletionCandidate (which goes), says nothing of who cordoned it."""
    assert gate_patch(node(unschedulable=True, taints=[STARTUP]), SLOT) is None
    assert gate_patch(node(unschedulable=True, taints=[CANDIDATE, STARTUP]), SLOT) == {
        "metadata": {"resourceVersion": "7"}, "spec": {"taints": [STARTUP]}}


def test_our_mark_alone_on_a_schedulable_node_is_taken_off_without_touching_the_spec():
    assert gate_patch(node(annotations=OURS), SLOT) == {
        "metadata": {"annotations": {names.ANNOTATION_CORDONED_BY: None}, "resourceVersion": "7"}, "spec": {}}


def test_at_boot_both_autoscaler_taints_go_and_the_list_is_replaced_whole():
    patch = gate_patch(node(taints=[CANDIDATE, STARTUP, TO_BE_DELETED]), SLOT)
    assert patch == {"metadata": {"resourceVersion": "7"}, "spec": {"taints": [STARTUP]}}
    assert gate_patch(node(taints=[CANDIDATE]), SLOT) == {"metadata": {"resourceVersion": "7"}, "spec": {"taints": []}}


def test_once_ready_the_autoscalers_drain_is_left_alone():
    """boot=False: the taints and cordon are the autoscaler's scale-down in progress."""
    assert gate_patch(node(taints=[CANDIDATE, TO_BE_DELETED]), SLOT, boot=False) is None
    assert gate_patch(node(unschedulable=True, annotations=OURS, taints=[TO_BE_DELETED]), SLOT, boot=False) == {
        "metadata": {"annotations": {names.ANNOTATION_CORDONED_BY: None}, "resourceVersion": "7"},
        "spec": {"unschedulable": False}}


def test_a_node_without_providerid_gets_the_slots_and_an_unmarked_node_the_machine_label():
    assert gate_patch(node(provider_id=""), SLOT) == {
        "metadata": {"resourceVersion": "7"}, "spec": {"providerID": f"{names.PROVIDER_ID_SCHEME}{SLOT}"}}
    assert gate_patch(node(machine_of=None), SLOT) == {
        "metadata": {"labels": {names.LABEL_MACHINE_OF: SLOT}, "resourceVersion": "7"}, "spec": {}}
    assert gate_patch(node(machine_of="worker-02"), SLOT)["metadata"]["labels"] == {names.LABEL_MACHINE_OF: SLOT}


def test_every_patch_is_conditional_on_the_node_as_read():
    for patch in (gate_patch(node(rv="41", annotations=OURS), SLOT), mark_patch(node(rv="41", machine_of=None), SLOT),
                  cordon_patch(node(rv="41"), SLOT), cordon_patch(node(rv="41", unschedulable=True, machine_of=None),
                                                                  SLOT)):
        assert patch["metadata"]["resourceVersion"] == "41", patch


def test_machine_of_reads_the_label():
    assert machine_of(node()) == SLOT
    assert machine_of(node(machine_of=None)) is None
    assert machine_of({"metadata": {}}) is None


def test_mark_patch_labels_only_a_node_that_does_not_say_the_slot():
    assert mark_patch(node(), SLOT) is None
    assert mark_patch(node(machine_of="worker-02"), SLOT) == {
        "metadata": {"resourceVersion": "7", "labels": {names.LABEL_MACHINE_OF: SLOT}}}


def test_cordon_patch_cordons_with_our_mark_and_labels_the_machine():
    assert cordon_patch(node(), SLOT) == {
        "metadata": {"resourceVersion": "7", "annotations": OURS}, "spec": {"unschedulable": True}}
    assert cordon_patch(node(machine_of=None), SLOT) == {
        "metadata": {"resourceVersion": "7", "annotations": OURS, "labels": {names.LABEL_MACHINE_OF: SLOT}},
        "spec": {"unschedulable": True}}


def test_an_already_cordoned_node_is_only_labelled_never_marked_as_ours():
    """A cordon someone else made stays theirs: marking it ours would let the gate lift it later."""
    assert cordon_patch(node(unschedulable=True), SLOT) is None
    assert cordon_patch(node(unschedulable=True, machine_of=None), SLOT) == {
        "metadata": {"resourceVersion": "7", "labels": {names.LABEL_MACHINE_OF: SLOT}}}
