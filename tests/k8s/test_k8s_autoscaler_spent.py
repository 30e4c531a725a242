"""A slot whose attempt streak is spent, under the real autoscaler (newest version found).

Two slots; worker-01's `status.lastClaim` says its last three boots failed (attempt 3 of the default limit 3,
never ready): a new claim there would be attempt 4 and fail AttemptLimitExceeded before buying anything
(model/attempts.py, docs/controller.md "AttemptLimitExceeded is sticky by design").

1. One pending pod: the autoscaler's scale-up claims worker-02, not worker-01, which sorts first and is just as
   quiet: IncreaseSize skips a spent slot.
2. A second pod, worker-02 taken: the only slot left is spent, so the provider tells the autoscaler the Group's
   maxSize is 1, not its spec's 2 (provider/logic.reported_group: the target plus the free slots); the autoscaler
   skips the Group at its maximum, asks nothing, is refused nothing and backs nothing off; no claim names
   worker-01. (Told 2, it asked IncreaseSize, was refused RESOURCE_EXHAUSTED naming worker-01, and backed the
   whole Group off, free slots and all, for minutes.)
3. A claim on worker-01 made by hand (a person, a script): it fails AttemptLimitExceeded at once, and the
   autoscaler reads that instance error as out of resources ("... due to OutOfResource.AttemptLimitExceeded"),
   deletes the errored instance once, and still buys nothing on worker-01.
"""
from __future__ import annotations

import datetime as dt

import pytest
import pytest_asyncio
from k8s_autoscaler import (NS, Pool, clocks, delete_asks, newest_lab, now, operator_log_size, scans_later,
                            story, until_running, workload)
from support.waits import until

from homecluster import names
from homecluster_lab.k8s.autoscaler import Autoscaler

pytestmark = pytest.mark.asyncio(loop_scope="module")
BOUND = 400.0  # the waits end when the thing happens; generous for 2 loaded cores
SLOTS = "/apis/infra.homecluster.dev/v2alpha1/nodes"
CLAIMS = "/apis/infra.homecluster.dev/v2alpha1/nodeclaims"
DEPLOYMENTS = f"/apis/apps/v1/namespaces/{NS}/deployments"
SPENT, FREE = "worker-01", "worker-02"
BY_HAND = "worker-01-by-hand"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def pool(tmp_path_factory: pytest.TempPathFactory):
    async with newest_lab(tmp_path_factory, "ca-spent-", slots=2) as (lab, build):
        assert lab.slot_names == [SPENT, FREE], lab.slot_names
        await lab.api.kube.merge_patch(f"{SLOTS}/{SPENT}/status", {"status": {"lastClaim": {
            "name": f"{SPENT}-earlier", "attempt": 3, "phase": "failed", "reason": "StartupJobFailed",
            "reachedReady": False, "finishedAt": _stamp(-3600)}}})
        async with Autoscaler.for_lab(lab, build, clocks=clocks()) as ca:
            yield Pool(lab, ca, build)


def _stamp(offset: float) -> str:
    when = dt.datetime.now(dt.timezone.utc).replace(microsecond=0) + dt.timedelta(seconds=offset)
    return when.isoformat().replace("+00:00", "Z")


def _bought_on(pool: Pool, slot: str) -> list[str]:
    """The provider's own word for every NodeClaim it created on `slot` (its names start with the slot's)."""
    text = pool.lab.operator.log_path.read_text(errors="replace")
    return [line for line in text.splitlines() if f"created NodeClaim {slot}-" in line]


def _log_lines(pool: Pool, *words: str) -> list[str]:
    return [line for line in pool.ca.log_text().splitlines() if all(w in line for w in words)]


async def test_a_scale_up_passes_over_the_spent_slot(pool: Pool, record_property) -> None:
    record_property("cluster_autoscaler", pool.build.release)
    lab, since = pool.lab, now()
    await lab.api.kube.create(DEPLOYMENTS, workload("spent", 1))
    # since: fails at once when a second claim is made (one on the spent slot fails at once, and another follows)
    placed = await until_running(lab, pool.ca, {"spent": 1}, f"the pod Running on {FREE}", BOUND, since=since)
    assert placed[0]["spec"]["nodeName"] == FREE, story(lab, pool.ca)
    assert _bought_on(pool, SPENT) == [] and len(_bought_on(pool, FREE)) == 1, story(lab, pool.ca)


async def test_with_only_the_spent_slot_left_the_group_is_full_and_nothing_is_asked(pool: Pool,
                                                                                  record_property) -> None:
    record_property("cluster_autoscaler", pool.build.release)
    lab = pool.lab
    if [c["spec"]["slotRef"] for c in lab.claims()] != [FREE]:
        pytest.skip(f"the first test did not leave one claim on {FREE}: {lab.claims()}")
    offset = len(pool.ca.log_text())
    await lab.api.kube.merge_patch(f"{DEPLOYMENTS}/spent", {"spec": {"replicas": 2}})

    def said(*words: str) -> list[str]:
        return [line for line in pool.ca.log_text()[offset:].splitlines() if all(w in line for w in words)]

    async def full():
        asked = said("NodeGroupIncreaseSize") + said("failed to increase node group size")
        assert not asked, f"the autoscaler asked for a machine only the spent {SPENT} could give: {asked}"
        return said("Skipping node group workers - max size reached")
    try:
        await until(full, "the autoscaler to skip workers at its maximum (the one slot not spent, taken)", BOUND)
        await scans_later(pool.ca, 5, BOUND)
        await full()  # still nothing asked, five scans on
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{story(lab, pool.ca)}") from None
    assert not said("Disabling scale-up for node group workers"), story(lab, pool.ca)
    assert _bought_on(pool, SPENT) == [], story(lab, pool.ca)
    assert [c["spec"]["slotRef"] for c in lab.claims()] == [FREE], story(lab, pool.ca)


async def test_a_claim_on_the_spent_slot_reads_as_out_of_resources_and_is_deleted_once(pool: Pool,
                                                                                      record_property) -> None:
    record_property("cluster_autoscaler", pool.build.release)
    lab = pool.lab
    start = operator_log_size(lab)
    await lab.api.kube.create(CLAIMS, {
        "apiVersion": "infra.homecluster.dev/v2alpha1", "kind": "NodeClaim",
        "metadata": {"name": BY_HAND, "labels": {names.LABEL_SLOT: SPENT, names.LABEL_GROUP: "workers"}},
        "spec": {"slotRef": SPENT, "requestedAt": _stamp(0), "deadlineAt": _stamp(1200)}})
    try:
        failed = await until(lambda: _now([c for c in lab.claims() if c["metadata"]["name"] == BY_HAND
                                           and (c.get("status") or {}).get("phase") == "failed"]),
                             f"{BY_HAND} to fail", BOUND)
        assert failed[0]["status"].get("reason") == "AttemptLimitExceeded", failed[0]["status"]
        await until(lambda: _now(_log_lines(pool, "Failed adding", "OutOfResource.AttemptLimitExceeded")),
                    "the autoscaler to read the instance error as out of resources", BOUND)
        await until(lambda: _now(BY_HAND not in {c["metadata"]["name"] for c in lab.claims()}),
                    f"the errored instance deleted (DeleteNodes of {BY_HAND}) and gone", BOUND)
        await scans_later(pool.ca, 5, BOUND)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{story(lab, pool.ca)}") from None
    assert delete_asks(lab, start) == {SPENT: 1}, (delete_asks(lab, start), story(lab, pool.ca))
    assert _bought_on(pool, SPENT) == [], story(lab, pool.ca)
    assert lab.machine(SPENT).power_state() == "off", lab.machine_summary()
    await lab.api.kube.merge_patch(f"{DEPLOYMENTS}/spent", {"spec": {"replicas": 0}})


async def _now(value):
    return value
