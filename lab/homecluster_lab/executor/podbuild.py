"""The Pod the Job controller would create for a Job (its status is the kubelet's: node/podstatus.py).

Pure: no I/O, the random suffix is passed in.
"""
from __future__ import annotations

import copy
from typing import Any

JOB_NAME_LABELS = ("batch.kubernetes.io/job-name", "job-name")
CONTROLLER_UID_LABELS = ("batch.kubernetes.io/controller-uid", "controller-uid")


def pod_name(job_name: str, suffix: str) -> str:
    """`<job>-<suffix>`, the base cut as the API server cuts a generateName (at 58 characters)."""
    return f"{job_name[:58]}-{suffix}"


def pod_for_job(job: dict[str, Any], name: str, node_name: str | None) -> dict[str, Any]:
    """A Pod from the Job's template, labelled and owned as the Job controller does it."""
    meta, template = job["metadata"], job["spec"]["template"]
    tmeta = template.get("metadata") or {}
    labels = dict(tmeta.get("labels") or {})
    for key in JOB_NAME_LABELS:
        labels[key] = meta["name"]
    for key in CONTROLLER_UID_LABELS:
        labels[key] = meta["uid"]
    spec = copy.deepcopy(template.get("spec") or {})
    if node_name:
        spec["nodeName"] = node_name
    pod_meta: dict[str, Any] = {
        "name": name,
        "namespace": meta["namespace"],
        "labels": labels,
        "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": meta["name"], "uid": meta["uid"],
                             "controller": True, "blockOwnerDeletion": True}],
    }
    if tmeta.get("annotations"):
        pod_meta["annotations"] = dict(tmeta["annotations"])
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": spec,
            "status": {"phase": "Pending"}}
