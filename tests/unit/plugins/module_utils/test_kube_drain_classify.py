"""kube_drain.classify: which pods a drain evicts, skips or refuses (pure, like kubectl drain)."""
from __future__ import annotations

from ansible_collections.homecluster.infra.plugins.module_utils.kube_drain import classify


def pod(name, owner_kind="ReplicaSet", volumes=(), annotations=None, phase="Running"):
    meta = {"name": name, "namespace": "default", "annotations": annotations or {}}
    if owner_kind:
        meta["ownerReferences"] = [{"kind": owner_kind, "name": "o", "controller": True}]
    return {"metadata": meta, "spec": {"volumes": list(volumes)}, "status": {"phase": phase}}


def keys(pods):
    return [p["metadata"]["name"] for p in pods]


def test_daemonset_and_mirror_pods_are_skipped():
    out = classify([pod("web"), pod("ds", "DaemonSet"), pod("static", "Node", annotations={"kubernetes.io/config.mirror": "x"})],
                   delete_emptydir_data=False, force=False)
    assert keys(out["evict"]) == ["web"]
    assert [s["pod"] for s in out["skipped"]] == ["default/ds", "default/static"]
    assert out["blocked"] == []


def test_emptydir_blocks_unless_allowed():
    scratch = pod("cache", volumes=[{"name": "tmp", "emptyDir": {}}])
    out = classify([scratch], delete_emptydir_data=False, force=False)
    assert out["evict"] == [] and "emptyDir" in out["blocked"][0]["reason"]
    assert keys(classify([scratch], delete_emptydir_data=True, force=False)["evict"]) == ["cache"]


def test_bare_pods_block_unless_forced():
    bare = pod("bare", owner_kind=None)
    assert classify([bare], False, False)["blocked"][0]["pod"] == "default/bare"
    assert keys(classify([bare], False, True)["evict"]) == ["bare"]


def test_finished_pods_are_evicted_whatever_they_hold():
    done = pod("job-1", owner_kind=None, volumes=[{"name": "t", "emptyDir": {}}], phase="Succeeded")
    assert keys(classify([done], False, False)["evict"]) == ["job-1"]
