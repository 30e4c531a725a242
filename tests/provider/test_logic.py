"""Pure decisions of the provider (logic, template, options, pricing), no server involved."""
from __future__ import annotations

from datetime import timedelta

import pytest

from homecluster.model.settings import Settings
from homecluster.provider import logic
from homecluster.provider.errors import ProviderError
from homecluster.provider.logic import InFlight
from homecluster.provider.options import group_options
from homecluster.provider.pricing import node_price, pod_price
from homecluster.provider.proto import externalgrpc_pb2 as pb
from homecluster.provider.proto import k8s_core_pb2 as core
from homecluster.provider.template import quantity_value, template_node
from homecluster.model.boundary import NodeSelector
from provider_objects import NOW, claim, corev1_node, filled_cache, group, slot, ts

S = Settings()
NONE = InFlight()


def pool(n=4, max_size=10, claims=(), nodes=(), **slot_spec):
    return filled_cache([group(max_size=max_size), group("gpu", max_size=2)],
                        [slot(f"w{i}", **slot_spec) for i in range(1, n + 1)] + [slot("g1", "gpu")],
                        claims, nodes)


# ---- groups and node resolution --------------------------------------------------------------

def test_group_info_carries_min_max_and_names_group_in_debug():
    info = logic.group_info(group(min_size=1, max_size=5))
    assert (info.id, info.min_size, info.max_size) == ("workers", 1, 5)
    assert "workers" in info.debug


def test_reported_max_size_is_what_the_slots_can_give_now():
    """maxSize as told to the autoscaler: the spec's, capped at the target plus the free slots, so it never plans a
    machine IncreaseSize would refuse RESOURCE_EXHAUSTED (and back the Group off for); minSize at that cap."""
    def told(cache, name="workers", inflight=NONE):
        return logic.reported_group(cache, cache.get("groups", name), inflight, S)
    # spec.maxSize 10 over 4 slots, one claimed: 1 in the target + 3 free
    info = told(pool(n=4, max_size=10, claims=[claim("w1", "ready")]))
    assert (info.id, info.min_size, info.max_size) == ("workers", 0, 4)
    assert "maxSize 10; its slots give 4 now" in info.debug
    # a slot being removed gives nothing, and minSize is held to the cap
    removed = slot("w2")
    removed["metadata"]["deletionTimestamp"] = ts()
    info = told(filled_cache([group(min_size=3, max_size=10)], [slot("w1"), removed, slot("w3")]))
    assert (info.min_size, info.max_size) == (2, 2) and "minSize 3, maxSize 10; its slots give 2 now" in info.debug
    # a claim being released holds its slot: not in the target, not free, until its machine is given back
    assert told(pool(n=4, claims=[claim("w1", "ready", deleting=True)])).max_size == 3
    # a slot reserved by an IncreaseSize in flight is in the target: counted once
    assert told(pool(n=4), inflight=InFlight(reserved_slots=frozenset({"w2"}))).max_size == 4
    # a spent attempt streak is not free
    spent = pool(n=4)
    exhausted = spent.get("slots", "w1")
    exhausted["status"]["lastClaim"] = {"name": "w1-x", "attempt": 3, "phase": "failed", "reachedReady": False}
    spent.upsert("slots", exhausted)
    assert told(spent).max_size == 3
    # the spec's bound when it is the lower; a Group whose slots are not known yet: 0
    assert told(pool(n=4), "gpu").max_size == 1
    assert told(pool(n=4, max_size=2)).max_size == 2
    assert told(filled_cache([group(max_size=3)], [])).max_size == 0


def test_unknown_group_is_not_found_and_lists_known_groups():
    with pytest.raises(ProviderError) as err:
        logic.require_group(pool(), "nope")
    assert err.value.code == "NOT_FOUND" and "'nope'" in err.value.message and "gpu, workers" in err.value.message


def test_resolve_by_declared_provider_id_default_and_placeholder():
    cache = filled_cache([group()], [slot("w1"), slot("w2", providerID="k3s://w2")])
    assert logic.resolve_slot(cache, "homecluster://w1", "")["metadata"]["name"] == "w1"
    assert logic.resolve_slot(cache, "k3s://w2", "w2")["metadata"]["name"] == "w2"
    # CA's placeholder for an unregistered instance: name == providerID == instance id
    assert logic.resolve_slot(cache, "k3s://w2", "k3s://w2")["metadata"]["name"] == "w2"
    assert logic.resolve_slot(cache, "", "k3s://w2")["metadata"]["name"] == "w2"


def test_resolve_provider_id_first_then_name_and_via_corev1_node():
    cache = filled_cache([group()], [slot("w1"), slot("w2", nodeName="box-2")],
                         nodes=[corev1_node("box-2", "k3s://box-2"), corev1_node("cp", "k3s://cp")])
    # providerID wins over a name that points elsewhere
    assert logic.resolve_slot(cache, "homecluster://w1", "box-2")["metadata"]["name"] == "w1"
    # a providerID the slot did not declare, found through the corev1 Node's name
    assert logic.resolve_slot(cache, "k3s://box-2", "")["metadata"]["name"] == "w2"
    assert logic.resolve_slot(cache, "", "box-2")["metadata"]["name"] == "w2"
    assert logic.resolve_slot(cache, "k3s://cp", "cp") is None
    assert logic.group_of_node(cache, "k3s://cp", "cp") is None


@pytest.mark.parametrize("role", ["node-role.kubernetes.io/control-plane", "node-role.kubernetes.io/master"])
def test_a_slot_declaring_the_control_planes_node_does_not_put_it_in_a_pool(role):
    # issue 15 item 7: the slot's author chose k3s://cp and nodeName cp; the autoscaler must not count the
    # control plane in the pool (nor scale it down, draining it, as one of the pool's nodes)
    cp = corev1_node("cp", "k3s://cp")
    cp["metadata"]["labels"] = {role: ""}
    cache = filled_cache([group()], [slot("evil", providerID="k3s://cp", nodeName="cp")], nodes=[cp])
    for provider_id, name in (("k3s://cp", "cp"), ("k3s://cp", ""), ("", "cp")):
        assert logic.resolve_slot(cache, provider_id, name) is None
        assert logic.group_of_node(cache, provider_id, name) is None
    # the same Node without the role label is the slot's (the boundary is the label, not the name)
    del cp["metadata"]["labels"]
    cache = filled_cache([group()], [slot("evil", providerID="k3s://cp", nodeName="cp")], nodes=[cp])
    assert logic.group_of_node(cache, "k3s://cp", "cp")["metadata"]["name"] == "workers"


def test_the_provider_follows_the_managed_node_selector_and_refuses_a_second_slot():
    nas = corev1_node("nas", "k3s://nas")  # a worker that is in no pool, named by a slot's author
    first = slot("w1", providerID="k3s://w1")
    first["metadata"]["creationTimestamp"] = ts()
    copy = slot("w9", providerID="k3s://w1", nodeName="w1-copy")  # declares w1's machine, later
    copy["metadata"]["creationTimestamp"] = ts(timedelta(minutes=1))
    cache = filled_cache([group()], [slot("grab", providerID="k3s://nas"), first, copy],
                         nodes=[nas, corev1_node("w1", "k3s://w1")])
    assert logic.group_of_node(cache, "k3s://nas", "nas") is not None  # no selector: a worker is reachable
    cache.managed_node_selector = NodeSelector.parse("homecluster.dev/pool=workers")
    assert logic.group_of_node(cache, "k3s://nas", "nas") is None
    assert logic.resolve_slot(cache, "k3s://w1", "w1") is None  # w1 is unlabelled too
    cache.managed_node_selector = None
    # the index may name either slot for k3s://w1; the Node is the first slot's all the same (model.identity)
    assert logic.resolve_slot(cache, "k3s://w1", "w1")["metadata"]["name"] == "w1"
    assert logic.resolve_slot(cache, "", "w1-copy") is None


# ---- target size and increase ---------------------------------------------------------------

def test_target_size_counts_live_claims_not_marked_for_deletion():
    cache = pool(claims=[claim("w1", "ready"), claim("w2", None), claim("w3", "booting", deleting=True),
                         claim("w4", "failed", reason="DeadlineExceeded"), claim("g1", "ready")])
    assert logic.target_size(cache, "workers", NONE) == 2
    assert logic.target_size(cache, "workers", InFlight(reserved_slots=frozenset({"w4"}))) == 3
    live_w1 = logic.slot_claims(cache, "w1").live["metadata"]["name"]
    assert logic.target_size(cache, "workers", InFlight(deleting_claims=frozenset({live_w1}))) == 1


def test_a_slot_being_removed_counts_for_nothing_and_is_never_offered():
    """A Terminating slot (pruned from Git; its finalizer lets the machine go, model/slotremoval.py): its live claim
    is being released, so it is not in the target, not cancelable by a decrease, listed Deleting, and never picked."""
    cache = pool(claims=[claim("w1", "ready"), claim("w2", None, name="w2-pending")])
    g = cache.get("groups", "workers")
    assert logic.target_size(cache, "workers", NONE) == 2
    for name in ("w1", "w2", "w3"):
        removed = cache.get("slots", name)
        removed["metadata"]["deletionTimestamp"] = ts()
        cache.upsert("slots", removed)
    assert logic.target_size(cache, "workers", NONE) == 0
    assert logic.plan_increase(cache, g, 1, NONE, S) == ["w4"]
    with pytest.raises(ProviderError) as refused:
        logic.plan_increase(cache, g, 2, NONE, S)
    assert "only 1 slot(s) are free" in refused.value.message
    with pytest.raises(ProviderError):
        logic.plan_decrease(cache, g, -1, NONE)  # w2's pending claim is no longer in the target
    instances, _ = logic.group_instances(cache, g, NONE, NOW, S)
    assert {i.id: i.state for i in instances} == {"homecluster://w1": logic.DELETING, "homecluster://w2": logic.DELETING}


def test_increase_picks_free_slots_in_name_order_and_skips_reserved():
    cache = pool(claims=[claim("w1", "ready")])
    g = cache.get("groups", "workers")
    assert logic.plan_increase(cache, g, 2, NONE, S) == ["w2", "w3"]
    assert logic.plan_increase(cache, g, 2, InFlight(reserved_slots=frozenset({"w2"})), S) == ["w3", "w4"]


def test_increase_refuses_bad_delta_max_and_missing_slots_with_reasons():
    cache = pool(n=3, max_size=3, claims=[claim("w1", "ready")])
    g = cache.get("groups", "workers")
    for delta in (0, -1):
        with pytest.raises(ProviderError) as err:
            logic.plan_increase(cache, g, delta, NONE, S)
        assert err.value.code == "INVALID_ARGUMENT" and "workers" in err.value.message
    with pytest.raises(ProviderError) as err:
        logic.plan_increase(cache, g, 3, NONE, S)
    assert err.value.code == "FAILED_PRECONDITION" and "maxSize 3" in err.value.message
    cache = pool(n=2, max_size=5)
    with pytest.raises(ProviderError) as err:
        logic.plan_increase(cache, cache.get("groups", "workers"), 3, NONE, S)
    assert err.value.code == "RESOURCE_EXHAUSTED" and "only 2" in err.value.message


def test_increase_skips_slots_whose_attempt_streak_is_exhausted():
    cache = pool(n=2)
    exhausted = cache.get("slots", "w1")
    exhausted["status"]["lastClaim"] = {"name": "w1-x", "attempt": 3, "phase": "failed", "reachedReady": False}
    cache.upsert("slots", exhausted)
    g = cache.get("groups", "workers")
    assert logic.plan_increase(cache, g, 1, NONE, S) == ["w2"]
    with pytest.raises(ProviderError) as err:
        logic.plan_increase(cache, g, 2, NONE, S)
    assert "w1" in err.value.message and "3 attempts" in err.value.message
    # a streak that ended ready restarts at 1
    exhausted["status"]["lastClaim"]["reachedReady"] = True
    cache.upsert("slots", exhausted)
    assert logic.plan_increase(cache, g, 2, NONE, S) == ["w1", "w2"]


def test_increase_prefers_quiet_slots_over_draining_ones_and_running_shutdowns():
    """A claim on a slot whose shutdown still runs waits for it (lifecycle.shutdown.hold_launch): such a slot
    is picked only when no quiet one (off, nothing running) is left."""
    cache = pool(n=5)
    w1, w2, w3 = (cache.get("slots", n) for n in ("w1", "w2", "w3"))
    w1["status"].update(powerState="on", phase="draining")  # an unwanted machine being shut down
    w2["status"]["shutdown"] = {"attempts": 1}  # its episode has not been observed off yet
    for s in (w1, w2):
        cache.upsert("slots", s)
    # w3's newest claim failed a minute ago and fired a forced shutdown: it may still run
    cache.upsert("claims", claim("w3", "failed", reason="StartupJobFailed", shutdownJob="w3-c-shutdown-1",
                                 finishedAt=ts(-timedelta(minutes=1))))
    # w4's newest claim failed too, long enough ago that its forced shutdown has ended
    cache.upsert("claims", claim("w4", "failed", reason="StartupJobFailed", shutdownJob="w4-c-shutdown-1",
                                 finishedAt=ts(-(S.shutdown_job_timeout + S.job_poll_interval))))
    g = cache.get("groups", "workers")
    assert logic.plan_increase(cache, g, 1, NONE, S, NOW) == ["w4"]
    assert logic.plan_increase(cache, g, 2, NONE, S, NOW) == ["w4", "w5"]
    assert logic.plan_increase(cache, g, 5, NONE, S, NOW) == ["w4", "w5", "w1", "w2", "w3"]
    # once w3's shutdown Job must have ended it is quiet again
    later = NOW + S.shutdown_job_timeout + S.job_poll_interval
    assert logic.plan_increase(cache, g, 3, NONE, S, later) == ["w3", "w4", "w5"]


@pytest.mark.parametrize("patched, power, picked", [
    ("draining", "off", ["w1"]),  # a machine observed off is quiet whatever the phase says
    ("off", "on", ["w2"]),  # a machine observed on is not, even when the phase was patched to "off"
])
def test_a_hand_patched_phase_does_not_change_which_slot_increase_picks(patched, power, picked):
    """issue 23 item 8: Node.status.phase is derived for display and decides nothing -- no provider call reads it
    to choose a slot. The pick follows the observed power (and the shutdown counter, the claims), never the phase."""
    cache = pool(n=2)
    w1 = cache.get("slots", "w1")
    w1["status"].update(powerState=power, phase=patched)
    cache.upsert("slots", w1)
    assert logic.plan_increase(cache, cache.get("groups", "workers"), 1, NONE, S, NOW) == picked


# ---- decrease and delete --------------------------------------------------------------------

def test_decrease_cancels_pending_newest_first_and_refuses_beyond_pending():
    old, new = claim("w1", None, age=timedelta(minutes=5)), claim("w2", "pending", age=timedelta(minutes=1))
    cache = pool(claims=[old, new, claim("w3", "booting"), claim("w4", "ready")])
    g = cache.get("groups", "workers")
    assert logic.plan_decrease(cache, g, -1, NONE) == [new["metadata"]["name"]]
    assert logic.plan_decrease(cache, g, -2, NONE) == [new["metadata"]["name"], old["metadata"]["name"]]
    with pytest.raises(ProviderError) as err:
        logic.plan_decrease(cache, g, -3, NONE)
    assert "only 2" in err.value.message and "workers" in err.value.message
    with pytest.raises(ProviderError) as err:
        logic.plan_decrease(cache, g, 1, NONE)
    assert err.value.code == "INVALID_ARGUMENT"


def test_delete_maps_nodes_to_claims_and_refuses_foreign_nodes():
    ready = claim("w1", "ready")
    failed = claim("w2", "failed", reason="StartupJobFailed", finishedAt=NOW.isoformat())
    cache = pool(claims=[ready, failed, claim("g1", "ready")], nodes=[corev1_node("cp", "k3s://cp")])
    g = cache.get("groups", "workers")
    targets = logic.plan_delete(cache, g, [("homecluster://w1", "w1"), ("homecluster://w2", "homecluster://w2"),
                                           ("homecluster://w3", "w3")], NONE, NOW, S)
    assert [t.claim for t in targets] == [ready["metadata"]["name"], failed["metadata"]["name"], None]
    with pytest.raises(ProviderError) as err:
        logic.plan_delete(cache, g, [("homecluster://w1", "w1"), ("homecluster://g1", "g1")], NONE, NOW, S)
    assert "'g1'" in err.value.message and "'gpu'" in err.value.message
    with pytest.raises(ProviderError) as err:
        logic.plan_delete(cache, g, [("k3s://cp", "cp")], NONE, NOW, S)
    assert "'cp'" in err.value.message and "no group" in err.value.message


# ---- instances ------------------------------------------------------------------------------

def test_instances_states_and_error_info():
    finished = (NOW - timedelta(minutes=1)).isoformat()
    cache = pool(n=7, claims=[
        claim("w1", None), claim("w2", "booting"), claim("w3", "ready"), claim("w4", "ready", deleting=True),
        claim("w5", "failed", reason="AttemptLimitExceeded", message="3 attempts", finishedAt=finished),
        claim("w6", "failed", reason="Canceled", finishedAt=finished),
    ])
    w7 = cache.get("slots", "w7")
    w7["status"]["powerState"] = "on"
    cache.upsert("slots", w7)
    instances, expires = logic.group_instances(cache, cache.get("groups", "workers"), NONE, NOW, S)
    by_id = {i.id: i for i in instances}
    assert set(by_id) == {f"homecluster://w{i}" for i in (1, 2, 3, 4, 5, 7)}  # w6: canceled, off -> absent
    assert [by_id[f"homecluster://w{i}"].state for i in (1, 2, 3, 4, 5, 7)] == [2, 2, 1, 3, 2, 3]
    failure = by_id["homecluster://w5"]
    assert (failure.error_code, failure.error_class, failure.error_message) == ("AttemptLimitExceeded", 1, "3 attempts")
    assert expires == NOW - timedelta(minutes=1) + S.boot_floor


def test_failure_is_reported_only_within_one_boot_window_and_until_superseded():
    long_ago = (NOW - S.boot_floor - timedelta(seconds=1)).isoformat()
    recent = (NOW - timedelta(minutes=2)).isoformat()
    cache = pool(n=2, claims=[
        claim("w1", "failed", reason="DeadlineExceeded", finishedAt=long_ago),
        claim("w2", "failed", reason="StartupJobFailed", finishedAt=recent, age=timedelta(minutes=10)),
        claim("w2", "completed", reason="Released", age=timedelta(minutes=1)),
    ])
    instances, _ = logic.group_instances(cache, cache.get("groups", "workers"), NONE, NOW, S)
    assert instances == []
    cache = pool(n=1, claims=[claim("w1", "failed", reason="StartupJobFailed", finishedAt=recent)])
    [only], _ = logic.group_instances(cache, cache.get("groups", "workers"), NONE, NOW, S)
    assert (only.state, only.error_class, only.error_code) == (2, 99, "StartupJobFailed")


def test_a_failure_the_autoscaler_deleted_is_reported_deleting_not_as_an_error_again():
    """After DeleteNodes on a creation error the claim is Terminating until its forced shutdown ends: saying
    Creating + errorInfo meanwhile would make the autoscaler delete it again and again."""
    recent = (NOW - timedelta(minutes=2)).isoformat()
    deleted = claim("w1", "failed", reason="StartupJobFailed", finishedAt=recent, deleting=True)
    asked = claim("w2", "failed", reason="StartupJobFailed", finishedAt=recent)
    cache = pool(n=2, claims=[deleted, asked])
    inflight = InFlight(deleting_claims=frozenset({asked["metadata"]["name"]}))
    instances, expires = logic.group_instances(cache, cache.get("groups", "workers"), inflight, NOW, S)
    assert [(i.id, i.state, i.error_code) for i in instances] == [
        ("homecluster://w1", 3, ""), ("homecluster://w2", 3, "")]
    assert expires is None


# ---- template, options, pricing -------------------------------------------------------------

def test_template_node_has_labels_taints_resources_and_conditions():
    node = template_node(group())
    assert node.metadata.labels["infra.homecluster.dev/group"] == "workers"
    assert node.metadata.labels["kubernetes.io/os"] == "linux"
    assert node.spec.taints[0].key == "homecluster.dev/pool" and node.spec.taints[0].effect == "NoSchedule"
    assert node.status.capacity["pods"].string == "110"
    assert node.status.allocatable["cpu"].string == "3800m"
    assert node.status.allocatable["pods"].string == "110"  # allocatable defaults to capacity
    assert {c.type: c.status for c in node.status.conditions}["Ready"] == "True"


@pytest.mark.parametrize("capacity, fragment", [
    ({"cpu": "4", "memory": "16Gi"}, "lacks pods"),
    ({"cpu": "four", "memory": "16Gi", "pods": "110"}, "capacity.cpu"),
])
def test_template_refuses_incomplete_or_unparsable_capacity(capacity, fragment):
    bad = group()
    bad["spec"]["template"]["capacity"] = capacity
    bad["spec"]["template"].pop("allocatable")
    with pytest.raises(ProviderError) as err:
        template_node(bad)
    assert err.value.code == "FAILED_PRECONDITION" and fragment in err.value.message and "workers" in err.value.message


def test_quantity_values():
    assert quantity_value("500m") == 0.5 and quantity_value("16Gi") == 16 * 2**30 and quantity_value("1e3") == 1000


def _defaults(new: bool, legacy: bool) -> pb.NodeGroupAutoscalingOptions:
    d = pb.NodeGroupAutoscalingOptions(scaleDownUtilizationThreshold=0.5, scaleDownGpuUtilizationThreshold=0.5)
    for f_new, f_legacy, minutes in (("scaleDownUnneededDuration", "scaleDownUnneededTime", 10),
                                     ("scaleDownUnreadyDuration", "scaleDownUnreadyTime", 20),
                                     ("MaxNodeProvisionDuration", "MaxNodeProvisionTime", 15)):
        if new:
            getattr(d, f_new).FromTimedelta(timedelta(minutes=minutes))
        if legacy:
            getattr(d, f_legacy).duration = minutes * 60 * 10**9
    return d


@pytest.mark.parametrize("new, legacy", [(True, False), (False, True), (True, True)])
def test_options_echo_defaults_and_fill_both_encodings(new, legacy):
    g = group(autoscaling={"scaleDownUtilizationThreshold": 0.3, "scaleDownUnneededTime": "5m"},
              maxNodeProvisionTime="20m")
    out = group_options(g, _defaults(new, legacy))
    assert out.scaleDownUtilizationThreshold == 0.3 and out.scaleDownGpuUtilizationThreshold == 0.5
    assert out.scaleDownUnneededDuration.seconds == 300 and out.scaleDownUnneededTime.duration == 300 * 10**9
    assert out.scaleDownUnreadyDuration.seconds == 1200 and out.scaleDownUnreadyTime.duration == 1200 * 10**9
    assert out.MaxNodeProvisionDuration.seconds == 1200 and out.MaxNodeProvisionTime.duration == 1200 * 10**9


def test_options_report_the_claim_budget_not_a_shorter_group_value():
    # 10m is below the 12m10s boot floor: the autoscaler must wait as long as the claim's deadline
    g = group(autoscaling={"zeroOrMaxNodeScaling": False}, maxNodeProvisionTime="10m")
    out = group_options(g, _defaults(True, True))
    assert out.MaxNodeProvisionDuration.seconds == 12 * 60 + 10
    assert out.MaxNodeProvisionTime.duration == (12 * 60 + 10) * 10**9


def test_options_unimplemented_without_autoscaling():
    with pytest.raises(ProviderError) as err:
        group_options(group(), _defaults(True, True))
    assert err.value.code == "UNIMPLEMENTED"


def test_node_and_pod_prices_scale_with_power_energy_and_window():
    cache = filled_cache([group(pricing={"energyPricePerKWh": 0.40})],
                         [slot("w1", powerDrawWatts=50), slot("w2", powerDrawWatts=150)])
    two_hours = NOW + timedelta(hours=2)
    assert node_price(cache, "homecluster://w1", "w1", {}, NOW, two_hours) == pytest.approx(0.05 * 0.40 * 2)
    # a template node (no slot): the group's mean draw, found through the group label
    assert node_price(cache, "", "template-node-for-workers-1", {"infra.homecluster.dev/group": "workers"},
                      NOW, two_hours) == pytest.approx(0.1 * 0.40 * 2)
    pod = core.Pod()
    c = pod.spec.containers.add(name="app")
    c.resources.requests["cpu"].string = "1900m"  # half of 3800m allocatable
    c.resources.requests["memory"].string = "3Gi"  # a fifth of 15Gi
    assert pod_price(cache, pod, NOW, two_hours) == pytest.approx(0.5 * 0.1 * 0.40 * 2)
    with pytest.raises(ProviderError):
        node_price(cache, "k3s://cp", "cp", {}, NOW, two_hours)


def test_cache_indexes_follow_updates_and_version_ignores_node_heartbeats():
    from homecluster.kube.cache import Cache
    cache = Cache()
    cache.upsert("slots", slot("w1", providerID="k3s://a"))
    assert [s["metadata"]["name"] for s in cache.slots_of_group("workers")] == ["w1"]
    cache.upsert("slots", slot("w1", "other", providerID="k3s://b"))
    assert cache.slots_of_group("workers") == []
    assert [s["metadata"]["name"] for s in cache.slots_of_group("other")] == ["w1"]
    cache.upsert("nodes", corev1_node("w1", "k3s://b"))
    version = cache.version
    cache.upsert("nodes", corev1_node("w1", "k3s://b", ready=False))  # a heartbeat-style update
    assert cache.version == version and cache.node_by_name("w1")["status"]["conditions"][0]["status"] == "False"
    cache.upsert("nodes", corev1_node("w1", "k3s://c"))
    assert cache.version > version and cache.node_by_provider_id("k3s://b") is None
    cache.delete("nodes", "w1")
    assert cache.node_by_provider_id("k3s://c") is None
    heard = []
    cache.on_synced_change(heard.append)
    for kind in ("groups", "slots", "claims"):
        cache.set_synced(kind)
    assert heard == [] and not cache.synced
    cache.set_synced("nodes")
    assert heard == [True] and cache.synced


def test_two_nodes_saying_one_provider_id_stay_findable_when_either_is_deleted():
    # a machine reinstalled under a new name, its old Node not yet deleted: deleting the Node the index named used
    # to clear the entry, and the other Node's machine was no longer found by its providerID
    from homecluster.kube.cache import Cache
    pid = "ipmi://10.0.0.5"

    def node(name, created):
        obj = corev1_node(name, pid)
        obj["metadata"]["creationTimestamp"] = created
        return obj

    cache = Cache()
    for name, created in (("zz-old", "2026-12-01T10:00:00Z"), ("aa-new", "2026-12-03T10:00:00Z"),
                          ("mm-mid", "2026-12-02T10:00:00Z")):
        cache.upsert("nodes", node(name, created))
    assert cache.node_by_provider_id(pid)["metadata"]["name"] == "aa-new"  # the one created last, not by name
    cache.upsert("nodes", node("aa-new", "2026-12-03T10:00:00Z"))  # a heartbeat changes nothing
    assert cache.node_by_provider_id(pid)["metadata"]["name"] == "aa-new"
    cache.delete("nodes", "aa-new")
    assert cache.node_by_provider_id(pid)["metadata"]["name"] == "mm-mid"
    cache.delete("nodes", "zz-old")  # not the one found: nothing changes
    assert cache.node_by_provider_id(pid)["metadata"]["name"] == "mm-mid"
    moved = node("mm-mid", "2026-12-02T10:00:00Z")
    moved["spec"]["providerID"] = "ipmi://10.0.0.6"  # its providerID changes: it is found under the new one only
    cache.upsert("nodes", moved)
    assert cache.node_by_provider_id(pid) is None
    assert cache.node_by_provider_id("ipmi://10.0.0.6")["metadata"]["name"] == "mm-mid"
    cache.delete("nodes", "mm-mid")
    assert cache.node_by_provider_id("ipmi://10.0.0.6") is None


def test_a_full_list_of_nodes_leaves_no_provider_id_of_a_node_it_dropped():
    from homecluster.kube.cache import Cache
    cache = Cache()
    cache.replace("nodes", [corev1_node("a", "ipmi://p"), corev1_node("b", "ipmi://p")])
    cache.replace("nodes", [corev1_node("a", "ipmi://q")])  # a relist: b is gone, a says another providerID
    assert cache.node_by_provider_id("ipmi://p") is None
    assert cache.node_by_provider_id("ipmi://q")["metadata"]["name"] == "a"
    cache.replace("nodes", [])
    assert cache.node_by_provider_id("ipmi://q") is None
