"""Per-Group options and a choice between two Groups, as the real autoscaler acts on them (newest version).

One lab (three slots in Group `workers`); each test runs its own cluster-autoscaler against it.
- spec.autoscaling.scaleDownUnneededTime (NodeGroupGetOptions) overrides the autoscaler's
  --scale-down-unneeded-time (the lab's 10 s): the empty node is removed only after the Group's 45 s, read from
  the autoscaler's own "was unneeded for" log line.
- Two Groups and `--expander=price`: slot worker-03 moved into a Group `cheap` whose machines draw 30 W against
  `workers`' 300 W at the same tariff; a pod both templates fit buys a machine of `cheap`
  (NodeGroupGetOptions and NodeGroupTemplateNodeInfo agree; the price is watts x tariff, provider/pricing.py).
  The choice is a real one: the autoscaler's log shows the price expander weighing both Groups, and no
  "No pod can fit" for either, before "Best option to resize: cheap".
- A Group allowed more machines than it has slots (cheap, maxSize 3 over one slot): the autoscaler is told
  maxSize 1 and stops at its one machine ("max size reached") instead of asking for more, being refused
  RESOURCE_EXHAUSTED and backing the Group off (provider/logic.reported_group).
"""
from __future__ import annotations

import copy
import re

import pytest
import pytest_asyncio
from k8s_autoscaler import BUILDS, NS, clocks, newest_lab, story, until_running, workload
from support.waits import until

from homecluster import names
from homecluster.model.observe import ready_status
from homecluster.model.phases import is_live
from homecluster_lab.k8s.autoscaler import Autoscaler
from homecluster_lab.k8s.labcluster import RealLabCluster

pytestmark = pytest.mark.asyncio(loop_scope="module")
BOUND = 400.0  # the waits end when the thing happens; generous for 2 loaded cores
GROUPS = "/apis/infra.homecluster.dev/v2alpha1/groups"
SLOTS = "/apis/infra.homecluster.dev/v2alpha1/nodes"
DEPLOYMENTS = f"/apis/apps/v1/namespaces/{NS}/deployments"
PRICED = "test.homecluster.dev/priced"  # a template label no joined Node carries
CAPPED = "test.homecluster.dev/capped"  # the same, on cheap's template only
UNNEEDED = 45.0  # the Group's scaleDownUnneededTime; the autoscaler's flag says 10 s


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def lab(tmp_path_factory: pytest.TempPathFactory):
    async with newest_lab(tmp_path_factory, "ca-pools-", slots=3) as (lab, _):
        yield lab


def go_seconds(text: str) -> float:
    """A Go duration as the autoscaler logs it ("45.1s", "1m2.5s", "800ms") in seconds."""
    units = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
    parts = re.findall(r"([0-9.]+)(ms|us|µs|ns|h|m|s)", text)
    assert parts and "".join(n + u for n, u in parts) == text, f"not a Go duration: {text!r}"
    return sum(float(n) * units[u] for n, u in parts)


async def test_go_seconds_reads_the_autoscalers_durations() -> None:  # async: the module's asyncio mark
    assert go_seconds("45.123s") == pytest.approx(45.123)
    assert go_seconds("1m2.5s") == pytest.approx(62.5)
    assert go_seconds("800ms") == pytest.approx(0.8)
    with pytest.raises(AssertionError):
        go_seconds("45 s")


async def test_the_groups_scale_down_unneeded_time_outweighs_the_flag(lab: RealLabCluster, record_property):
    build = BUILDS[-1]
    record_property("cluster_autoscaler", build.release)
    await lab.api.kube.merge_patch(f"{GROUPS}/{lab.config.group}",
                                   {"spec": {"autoscaling": {"scaleDownUnneededTime": f"{UNNEEDED:g}s"}}})
    async with Autoscaler.for_lab(lab, build, clocks=clocks()) as ca:
        assert "--scale-down-unneeded-time=10s" in ca.argv
        await lab.api.kube.create(DEPLOYMENTS, workload("unneeded", 1))

        placed = await until_running(lab, ca, {"unneeded": 1}, "the pod Running on a machine it bought", BOUND)
        node = placed[0]["spec"]["nodeName"]
        try:
            await lab.api.kube.merge_patch(f"{DEPLOYMENTS}/unneeded", {"spec": {"replicas": 0}})

            def removal() -> list[str]:
                lines = ca.log_text().splitlines()
                at = next((i for i, line in enumerate(lines) if "Scale-down: removing empty node" in line
                           and node in line), None)
                return [] if at is None else lines[:at + 1]

            async def removed():
                return removal()
            lines = await until(removed, f"the autoscaler to remove the empty node {node}", BOUND)

            async def deleted():  # DeleteNodes reached the provider before this autoscaler stops
                return not [c for c in lab.claims() if c["spec"]["slotRef"] == node
                            and not c["metadata"].get("deletionTimestamp")]
            await until(deleted, f"{node}'s claim deleted (DeleteNodes)", BOUND)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{story(lab, ca)}") from None
    waited = [go_seconds(m.group(1)) for m in (re.search(rf"\b{re.escape(node)} was unneeded for (\S+)", line)
                                                for line in lines) if m]
    assert waited, f"no 'was unneeded for' line for {node}\n{story(lab, ca)}"
    assert waited[-1] >= UNNEEDED, (f"{node} removed after {waited[-1]:g}s unneeded: the Group's "
                                    f"scaleDownUnneededTime {UNNEEDED:g}s did not reach the autoscaler")


async def split_off_cheap(lab: RealLabCluster) -> str:
    """A Group `cheap` (maxSize 1, 30 W) of one slot moved out of `workers` (300 W), both templates carrying the
    label PRICED, from a clean pool (every claim released, every machine off, no pool Node Ready): the slot moved."""
    workers = await lab.api.kube.get(f"{GROUPS}/{lab.config.group}")
    cheap = {"apiVersion": workers["apiVersion"], "kind": workers["kind"],
             "metadata": {"name": "cheap", "labels": dict(workers["metadata"].get("labels") or {})},
             "spec": copy.deepcopy(workers["spec"])}
    cheap["spec"]["maxSize"] = 1
    cheap["spec"]["template"]["labels"][names.LABEL_GROUP] = "cheap"
    cheap["spec"].pop("autoscaling", None)
    # a label only the two templates carry: no Node already up can take the pod, so the autoscaler must choose
    cheap["spec"]["template"]["labels"][PRICED] = "yes"
    await lab.api.kube.create(GROUPS, cheap)
    await lab.api.kube.merge_patch(f"{GROUPS}/{lab.config.group}",
                                   {"spec": {"template": {"labels": {PRICED: "yes"}}}})

    # A clean pool first: the earlier test's spec.autoscaling costs the startup-taint protection on 1.35+
    # (docs/autoscaler.md), and the machines its autoscaler bought for that reason are still on with ready
    # claims, their Nodes Ready: the new autoscaler would build workers' template from one of them (no label).
    await lab.api.kube.merge_patch(f"{GROUPS}/{lab.config.group}", {"spec": {"autoscaling": None}})
    for claim in lab.claims():
        await lab.api.kube.delete(f"/apis/infra.homecluster.dev/v2alpha1/nodeclaims/{claim['metadata']['name']}")

    async def released():
        return not lab.claims() and all(lab.machine(s).power_state() == "off" for s in lab.slot_names)
    await until(released, f"every claim released and every machine off ({lab.machine_summary()})", BOUND)

    async def quiet():  # the slot moved must be off, with no claim, before it changes Group
        claimed = {c["spec"]["slotRef"] for c in lab.claims()}
        return [s for s in lab.slot_names if s not in claimed and lab.machine(s).power_state() == "off"]
    moved = (await until(quiet, "a slot off and unclaimed", BOUND))[0]
    await lab.api.kube.merge_patch(f"{SLOTS}/{moved}", {"spec": {"groupRef": "cheap", "powerDrawWatts": 30}})
    for slot in [s for s in lab.slot_names if s != moved]:
        await lab.api.kube.merge_patch(f"{SLOTS}/{slot}", {"spec": {"powerDrawWatts": 300}})

    async def no_pool_node_ready():
        # The autoscaler builds a group's template from a Ready Node of it when it sees one, and caches it: a pool
        # Node joined without the new label, still reading Ready for the node lifecycle controller's grace after
        # its machine went off, would be its group's template for good. The moved slot's as cheap's: 'No pod can
        # fit to cheap' for 400 s in a clean-clone run. The earlier test's as workers': 'No pod can fit to
        # workers', and cheap won as the only option left, the price expander choosing nothing. Start the
        # autoscaler once every pool Node reads NotReady, or is gone, so both templates are the provider's.
        return not set(lab.slot_names) & await _ready_nodes(lab)
    await until(no_pool_node_ready, "every pool Node NotReady or gone", BOUND)
    return moved


async def test_the_price_expander_buys_from_the_cheaper_group(lab: RealLabCluster, record_property):
    build = BUILDS[-1]
    record_property("cluster_autoscaler", build.release)
    moved = await split_off_cheap(lab)
    before = {c["metadata"]["name"] for c in lab.claims()}
    # --v=5: the price expander logs its score of every option it weighs ("Price expander for <group>: ...")
    async with Autoscaler.for_lab(lab, build, clocks=clocks(), extra=("--expander=price", "--v=5")) as ca:
        offset = len(ca.log_text())  # the log file is shared with the earlier test's autoscaler
        priced = workload("priced", 1)
        priced["spec"]["template"]["spec"]["nodeSelector"] = {PRICED: "yes"}
        await lab.api.kube.create(DEPLOYMENTS, priced)

        async def bought():
            return [c["spec"]["slotRef"] for c in lab.claims() if c["metadata"]["name"] not in before]
        try:
            slots = await until(bought, "the autoscaler's scale-up for the pod", BOUND)
            await lab.api.kube.merge_patch(f"{DEPLOYMENTS}/priced", {"spec": {"replicas": 0}})
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{story(lab, ca)}") from None
        assert slots == [moved], (f"the price expander chose {slots} (Group workers, 300 W) over "
                                  f"{moved} (Group cheap, 30 W)\n{story(lab, ca)}")
        problem = price_choice_problem(ca.log_text()[offset:].splitlines())
        assert problem is None, f"{problem}\n{story(lab, ca)}"


async def test_a_group_allowed_more_machines_than_it_has_slots_is_told_its_slots(lab: RealLabCluster,
                                                                                  record_property):
    """spec.maxSize 3 over the one slot of `cheap`: NodeGroups says at most 1 (provider/logic.reported_group), so
    the autoscaler stops at the machine the slot allows ("max size reached") for two pods only cheap's template
    fits. Told 3, it asked IncreaseSize for machines no slot could give, was refused RESOURCE_EXHAUSTED, and backed
    the Group off for minutes. Starts from the price test's pool (cheap's machine bought), or splits cheap off."""
    build = BUILDS[-1]
    record_property("cluster_autoscaler", build.release)
    groups = {g["metadata"]["name"] for g in (await lab.api.kube.get(GROUPS))["items"]}
    if "cheap" not in groups:
        await split_off_cheap(lab)
    await lab.api.kube.merge_patch(f"{GROUPS}/cheap",
                                   {"spec": {"maxSize": 3, "template": {"labels": {CAPPED: "yes"}}}})
    (slot,) = [s["metadata"]["name"] for s in (await lab.api.kube.get(SLOTS))["items"]
               if s["spec"]["groupRef"] == "cheap"]

    async def settled():
        # The price test's autoscaler may have begun removing cheap's empty machine: its release ends first (a slot
        # busy releasing is not free, so the autoscaler would be told 0 and buy nothing). A slot left free must
        # have no Ready Node, or the autoscaler builds cheap's template from that Node, which lacks CAPPED.
        claims = [c for c in lab.claims()
                  if c["spec"]["slotRef"] == slot and is_live((c.get("status") or {}).get("phase"))]
        if any(c["metadata"].get("deletionTimestamp") for c in claims):
            return False
        return bool(claims) or slot not in await _ready_nodes(lab)
    await until(settled, f"{slot} claimed, or free with no Ready Node", BOUND)
    # the lab's --v=4: the autoscaler names a group it skips at its maximum ("Skipping node group cheap - max size
    # reached")
    async with Autoscaler.for_lab(lab, build, clocks=clocks()) as ca:
        offset = len(ca.log_text())  # the log file is shared with the earlier tests' autoscalers
        capped = workload("capped", 2)
        capped["spec"]["template"]["spec"]["nodeSelector"] = {CAPPED: "yes"}
        await lab.api.kube.create(DEPLOYMENTS, capped)

        async def at_its_slots():
            log = ca.log_text()[offset:]
            refused = [line for line in log.splitlines()  # the autoscaler's words: "... code = ResourceExhausted"
                       if "ResourceExhausted" in line or "failed to increase node group size" in line.lower()]
            assert not refused, f"the autoscaler asked for more machines than cheap has slots: {refused}"
            return "Skipping node group cheap - max size reached" in log
        try:
            await until(at_its_slots, "the autoscaler to stop at cheap's one slot", BOUND)
            await lab.api.kube.merge_patch(f"{DEPLOYMENTS}/capped", {"spec": {"replicas": 0}})
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{story(lab, ca)}") from None
        plans = [line for line in ca.log_text()[offset:].splitlines() if "Final scale-up plan" in line]
        assert all("(max: 1)" in line for line in plans if "cheap" in line), f"{plans}\n{story(lab, ca)}"
        live = [c for c in lab.claims()
                if c["spec"]["slotRef"] == slot and not c["metadata"].get("deletionTimestamp")]
        assert live, f"no live claim on cheap's slot {slot}: its one machine was not bought\n{story(lab, ca)}"


def price_choice_problem(lines: list[str]) -> str | None:
    """What makes the autoscaler's first price-expander choice in `lines` (its log) not a real choice of cheap
    over workers, or None: no choice, another winner, a Group whose template did not fit the pod ("No pod can
    fit to", so the other won alone), a Group the expander did not weigh, or cheap not scoring lower."""
    at = next((i for i, line in enumerate(lines) if "Best option to resize" in line), None)
    if at is None or "cheap" not in lines[at]:
        return f"the choice was not cheap: {lines[at] if at is not None else 'no choice logged'}"
    unfit = [line for line in lines[:at] if "No pod can fit to" in line]
    if unfit:
        return f"a Group's template did not fit the pod, so there was no choice: {unfit}"
    scores = {m.group(1): float(m.group(2)) for m in (
        re.search(r"Price expander for (\w+): .*final_score=(\S+)", line) for line in lines[:at]) if m}
    if set(scores) != {"workers", "cheap"}:
        return f"the price expander weighed {sorted(scores)} before choosing, not both Groups"
    if not scores["cheap"] < scores["workers"]:  # lower is better: 30 W against 300 W
        return f"cheap did not score lower: {scores}"
    return None


# the autoscaler's lines (1.36.1, --v=5) of a real choice, and of the one a clean-clone run made before the test
# started from a clean pool: workers' template came from a Ready Node without the label
REAL = ["I1203 21:41:17.027021 8601 price.go:170] Price expander for cheap: all_nodes_price=0.009000 "
        "pods_price=0.006750 stabilized_ratio=1.285714 unfitness=2.000000 suppressed=2.000000 final_score=2.571429",
        "I1203 21:41:17.028485 8601 price.go:170] Price expander for workers: all_nodes_price=0.090000 "
        "pods_price=0.006750 stabilized_ratio=11.571429 unfitness=2.000000 suppressed=2.000000 final_score=23.142857",
        "I1203 21:41:17.028520 8601 orchestrator.go:1085] Best option to resize: cheap"]
VACUOUS = ["I1203 20:44:21.845682 13654 orchestrator.go:1058] No pod can fit to workers",
           "I1203 20:44:21.849576 13654 orchestrator.go:1085] Best option to resize: cheap"]


async def test_a_choice_is_real_only_when_both_groups_were_weighed() -> None:  # async: the module's asyncio mark
    assert price_choice_problem(REAL) is None
    assert "no choice" in price_choice_problem(VACUOUS)
    assert "not both Groups" in price_choice_problem(REAL[:1] + REAL[2:])
    assert "did not score lower" in price_choice_problem([REAL[1].replace("workers", "cheap"),
                                                          REAL[0].replace("cheap", "workers"), REAL[2]])
    assert "not cheap" in price_choice_problem(REAL[:2] + [REAL[2].replace("cheap", "workers")])


async def _ready_nodes(lab: RealLabCluster) -> set[str]:
    """The names of the Nodes whose Ready condition is True, as the operator reads it (model/observe.py)."""
    return {n["metadata"]["name"] for n in (await lab.api.kube.get("/api/v1/nodes"))["items"]
            if ready_status(n) == "True"}
