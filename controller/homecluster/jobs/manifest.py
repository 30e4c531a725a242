"""Pure builders of the batch/v1 Job manifests that power a slot's machine on and off.

No I/O: the claim controller fetches the claim, the slot and the group, calls a builder, and creates
what it returns. Everything here follows docs/job-contract.md.
"""
from __future__ import annotations

import json
import math
from datetime import timedelta
from collections.abc import Iterable, Mapping
from typing import Any

from homecluster import GROUP_VERSION, names
from homecluster.jobs.errors import JobSpecError
from homecluster.jobs.extravars import (CREDENTIALS_DIR, KNOWN_HOSTS_DIR, KNOWN_HOSTS_FILE, credentials_ref,
                                        extra_vars, known_hosts_ref, power_method)
from homecluster.jobs.naming import label_value, shutdown_job_name, startup_job_name
from homecluster.jobs.placement import avoided_nodes, job_affinity
from homecluster.jobs.policy import JobPolicy, job_refusals
from homecluster.jobs.objects import as_dict
from homecluster.model.objects import dig, name_of, uid_of
from homecluster.model.deadlines import (GroupSpecError, SlotSpecError, boot_check_timeout, startup_budget_refusal,
                                         startup_job_timeout)

STARTUP, SHUTDOWN = "startup", "shutdown"
# Playbooks are addressed by their collection name, so they resolve through ANSIBLE_COLLECTIONS_PATH
# wherever the collection is installed (the runner image, or build/collections in the lab).
PLAYBOOKS = {STARTUP: "homecluster.infra.startup", SHUTDOWN: "homecluster.infra.shutdown"}
# A shutdown's init container: cordon and drain, the only step that holds a Kubernetes token.
DRAIN_PLAYBOOK = "homecluster.infra.drain"
DRAIN_CONTAINER_NAME = "cordon-drain"
KUBE_API_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"

JOB_VARS_ANNOTATION = f"{names.API_GROUP}/job-vars"
JOB_VARS_DIR = "/etc/homecluster/job"
JOB_VARS_FILE = f"{JOB_VARS_DIR}/vars.json"
RUNNER_DIR = "/runner"
CONTAINER_NAME = "ansible-runner"
DEFAULT_SERVICE_ACCOUNT = "homecluster-job"
DEFAULT_TTL_AFTER_FINISHED = 3600
DEFAULT_RESOURCES = {"requests": {"cpu": "50m", "memory": "128Mi"}, "limits": {"memory": "512Mi"}}
# The runner image's unprivileged user; the Secret's files are group-readable through fsGroup.
RUN_AS = 1000


def job_command(kind: str, known_hosts: bool = False) -> list[str]:
    """The container command of a lifecycle Job (the contract's "The container").

    The vars file is named, not loaded with `-e @file`: ansible-core renders templates inside extra
    vars, and the file carries a slot's fields. The playbooks read it with a lookup, whose result
    ansible-core 2.19 keeps untrusted, so its values stay data (docs/security.md).
    credentials_dir is given on the command line rather than in the file: a path in the command is
    where the lab's executor localises mounted paths, a path inside a file is not.
    """
    # a shutdown's cordon and drain ran in its init container (drain_command), with the token this one lacks
    tail = " -e cordon_and_drain=false" if kind == SHUTDOWN else ""
    if known_hosts:  # a path, so on the command line (see above); the SSH power-off then checks the host key
        tail += f" -e ssh_known_hosts_file={KNOWN_HOSTS_FILE}"
    return ["ansible-runner", "run", RUNNER_DIR, "--playbook", PLAYBOOKS[kind],
            "--cmdline", f"-e job_vars_file={JOB_VARS_FILE} -e credentials_dir={CREDENTIALS_DIR}{tail}"]


def drain_command() -> list[str]:
    """The command of a shutdown's init container: cordon and drain the slot's Node (no credentials)."""
    return ["ansible-runner", "run", RUNNER_DIR, "--playbook", DRAIN_PLAYBOOK,
            "--cmdline", f"-e job_vars_file={JOB_VARS_FILE}"]


def _token_volume() -> dict[str, Any]:
    """The service-account token, CA and namespace, as automountServiceAccountToken would mount them, but as a
    volume that only the container which cordons and drains mounts."""
    return {"name": "kube-api-access", "projected": {"defaultMode": 0o444, "sources": [
        {"serviceAccountToken": {"path": "token", "expirationSeconds": 3607}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}],
                       "optional": True}},
        {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"fieldPath": "metadata.namespace"}}]}},
    ]}}


def _deadline_seconds(timeout: Any, what: str) -> int:
    if isinstance(timeout, timedelta):
        seconds = timeout.total_seconds()
    elif isinstance(timeout, (int, float)):
        seconds = float(timeout)
    else:
        raise JobSpecError(f"settings.{what} must be a timedelta, got {timeout!r}")
    if seconds <= 0:
        raise JobSpecError(f"settings.{what} must be positive, got {timeout!r}")
    return max(1, math.ceil(seconds))


def _job_timeout(kind: str, slot: dict[str, Any], group: dict[str, Any], settings: Any, attr: str) -> Any:
    """The Job's activeDeadlineSeconds as a duration: for a startup, the slot's boot budget (spec.bootCheck.timeout)
    plus a margin when it declares one, refused when it does not fit the claim's boot budget
    (model.deadlines.startup_budget_refusal); else the setting."""
    if kind != STARTUP:
        return getattr(settings, attr, None)
    try:
        if boot_check_timeout(slot) is None:
            return getattr(settings, attr, None)
        refused = startup_budget_refusal(slot, group, settings)
    except (SlotSpecError, GroupSpecError) as exc:
        raise JobSpecError(str(exc)) from None
    if refused is not None:
        raise JobSpecError(refused)
    return startup_job_timeout(slot, settings)


def _owner_reference(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    uid = uid_of(obj)
    if not uid:
        raise JobSpecError(
            f'{kind} "{name_of(obj)}": metadata.uid is missing; build lifecycle Jobs from the object as read '
            f"from the API server, so the Job can be owned (and collected) by it"
        )
    return {"apiVersion": GROUP_VERSION, "kind": kind, "name": name_of(obj), "uid": uid,
            "controller": True, "blockOwnerDeletion": True}


def _labels(kind: str, slot_name: str, group_name: str, claim_name: str | None) -> dict[str, str]:
    labels = {
        names.LABEL_SLOT: label_value(slot_name),
        names.LABEL_GROUP: label_value(group_name),
        names.LABEL_JOB_KIND: kind,
        names.LABEL_MANAGED_BY: names.MANAGED_BY,
    }
    if claim_name:
        labels[names.LABEL_CLAIM] = label_value(claim_name)
    return labels


def _credentials_volume(slot: dict[str, Any], kind: str, namespace: str) -> dict[str, Any] | None:
    ref = credentials_ref(slot, kind)
    if ref is None:
        return None
    if ref.namespace and ref.namespace != namespace:
        raise JobSpecError(
            f'slot "{name_of(slot)}": {ref.field}.namespace is "{ref.namespace}", but lifecycle Jobs run in '
            f'namespace "{namespace}" and a pod can only mount a Secret of its own namespace; put the Secret '
            f'"{ref.name}" in "{namespace}" and set {ref.field}.namespace to "{namespace}" or leave it empty'
        )
    # Only the keys the step reads are projected: a slot that names another Secret of the namespace (a
    # certificate's tls.key, say) gets a pod that cannot start, never that Secret's other keys.
    keys = ("privateKey",) if ref.field.startswith("spec.power.ssh.") else ("username", "password")
    return {"name": "credentials", "secret": {"secretName": ref.name, "defaultMode": 0o440,
                                              "items": [{"key": k, "path": k} for k in keys]}}


def _checked_jobs(group: dict[str, Any], policy: JobPolicy) -> dict[str, Any]:
    """The Group's spec.jobs, refused when it names an image or ServiceAccount the operator does not allow."""
    jobs = dig(group, "spec", "jobs", default={}) or {}
    refusals = job_refusals(jobs, policy)
    if refusals:
        raise JobSpecError(f'Group "{name_of(group)}": ' + "; ".join(f"{f}: {text}" for f, text in refusals))
    return jobs


def _pod_spec(kind: str, slot: dict[str, Any], group: dict[str, Any], namespace: str, image: str,
              service_account: str, policy: JobPolicy, drain: bool = False,
              avoided: list[str] | None = None) -> dict[str, Any]:
    jobs = _checked_jobs(group, policy)
    if service_account not in policy.service_accounts:
        raise JobSpecError(f'the operator\'s lifecycle Job ServiceAccount "{service_account}" is refused (the '
                           f"operator's and the autoscaler's accounts never run a Job); configure another")
    mounts = [
        {"name": "runner", "mountPath": RUNNER_DIR},
        {"name": "tmp", "mountPath": "/tmp"},
        {"name": "job-vars", "mountPath": JOB_VARS_DIR, "readOnly": True},
    ]
    volumes: list[dict[str, Any]] = [
        {"name": "runner", "emptyDir": {}},
        {"name": "tmp", "emptyDir": {}},
        {"name": "job-vars", "downwardAPI": {"defaultMode": 0o444, "items": [{
            "path": "vars.json",
            "fieldRef": {"fieldPath": f"metadata.annotations['{JOB_VARS_ANNOTATION}']"},
        }]}},
    ]
    secret = _credentials_volume(slot, kind, namespace)
    if secret:
        volumes.append(secret)
        mounts.append({"name": "credentials", "mountPath": CREDENTIALS_DIR, "readOnly": True})
    known_hosts = known_hosts_ref(slot, kind)
    if known_hosts:
        volumes.append({"name": "known-hosts", "configMap": {
            "name": known_hosts, "defaultMode": 0o444, "items": [{"key": "known_hosts", "path": "known_hosts"}]}})
        mounts.append({"name": "known-hosts", "mountPath": KNOWN_HOSTS_DIR, "readOnly": True})
    container = {
        "name": CONTAINER_NAME,
        "image": jobs.get("image") or image,
        "command": job_command(kind, known_hosts=bool(known_hosts)),
        # HOME on the writable emptyDir: ansible keeps its temp files under ~/.ansible.
        "env": [{"name": "HOME", "value": RUNNER_DIR}, {"name": "ANSIBLE_NOCOLOR", "value": "1"}],
        "volumeMounts": mounts,
        "resources": jobs.get("resources") or DEFAULT_RESOURCES,
        "terminationMessagePolicy": "FallbackToLogsOnError",
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "runAsNonRoot": True,
            "capabilities": {"drop": ["ALL"]},
        },
    }
    if jobs.get("imagePullPolicy"):
        container["imagePullPolicy"] = jobs["imagePullPolicy"]
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "serviceAccountName": jobs.get("serviceAccountName") or service_account,
        # No container gets a token by default: the one that cordons and drains mounts it (below), the one
        # that talks to the BMC never does.
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "securityContext": {
            "runAsNonRoot": True, "runAsUser": RUN_AS, "runAsGroup": RUN_AS, "fsGroup": RUN_AS,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "containers": [container],
        "volumes": volumes,
    }
    if drain:
        volumes.append(_token_volume())
        init = dict(container, name=DRAIN_CONTAINER_NAME, command=drain_command(),
                    volumeMounts=[m for m in mounts if m["name"] not in ("credentials", "known-hosts")]
                    + [{"name": "kube-api-access", "mountPath": KUBE_API_DIR, "readOnly": True}])
        spec["initContainers"] = [init]
    if kind == STARTUP and power_method(slot) == "wol":
        # The magic packet must be broadcast on the machines' own segment, not the pod network.
        spec["hostNetwork"] = True
        spec["dnsPolicy"] = "ClusterFirstWithHostNet"
    for key in ("nodeSelector", "tolerations", "priorityClassName"):
        if jobs.get(key):
            spec[key] = jobs[key]
    # never on a slot's Node (jobs.placement); the scheduler requires this and the nodeSelector above both
    affinity = job_affinity(avoided or [])
    if affinity:
        spec["affinity"] = affinity
    return spec


def _job(kind: str, name: str, owner: dict[str, Any], claim: dict[str, Any] | None, slot: dict[str, Any],
         group: dict[str, Any], settings: Any, *, namespace: str, image: str, force: bool,
         service_account: str, ttl_seconds_after_finished: int, allowed_images: Iterable[str],
         allowed_service_accounts: Iterable[str], node: dict[str, Any] | None = None,
         slots: Iterable[Any] = (), never_slots: Iterable[str] = (),
         registered: Mapping[str, str] | None = None) -> dict[str, Any]:
    policy = JobPolicy.of(image, service_account, allowed_images, allowed_service_accounts)
    group_name = name_of(group) or dig(slot, "spec", "groupRef", default="")
    timeout_attr = f"{kind}_job_timeout"
    deadline = _deadline_seconds(_job_timeout(kind, slot, group, settings, timeout_attr), timeout_attr)
    labels = _labels(kind, name_of(slot), group_name, name_of(claim) if claim else None)
    job_vars = extra_vars(kind, slot, claim, group_name, settings, force=force, node=node, job_timeout=deadline)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels),
                     "annotations": {names.ANNOTATION_SLOT_NAME: name_of(slot)}, "ownerReferences": [owner]},
        "spec": {
            "backoffLimit": 0,
            "activeDeadlineSeconds": deadline,
            "ttlSecondsAfterFinished": ttl_seconds_after_finished,
            "template": {
                "metadata": {"labels": dict(labels),
                             "annotations": {names.ANNOTATION_SLOT_NAME: name_of(slot),
                                             JOB_VARS_ANNOTATION: json.dumps(job_vars, sort_keys=True,
                                                                             separators=(",", ":"))}},
                "spec": _pod_spec(kind, slot, group, namespace, image, service_account, policy,
                                  drain=kind == SHUTDOWN and not force and bool(job_vars.get("node_name")),
                                  avoided=avoided_nodes(slot, [as_dict(s) for s in slots], node, never_slots,
                                                        registered)),
            },
        },
    }


def startup_job(claim: Any, slot: Any, group: Any, settings: Any, *, namespace: str, image: str,
                service_account: str = DEFAULT_SERVICE_ACCOUNT,
                ttl_seconds_after_finished: int = DEFAULT_TTL_AFTER_FINISHED,
                allowed_images: Iterable[str] = (), allowed_service_accounts: Iterable[str] = (),
                slots: Iterable[Any] = (), never_slots: Iterable[str] = (),
                registered: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The startup Job of a claim: power the slot's machine on. Owned by the claim.

    `image` is the operator's default runner image; the Group's spec.jobs.image wins over it when it is
    `image` or one of `allowed_images` (likewise spec.jobs.serviceAccountName and `allowed_service_accounts`;
    see jobs.policy), and is refused otherwise.
    `slots` are every slot the operator knows: the pod's node affinity keeps it off their Nodes (and
    always off this slot's, and off the Nodes `registered` says were found for slots by providerID under
    another name), but for the existing Nodes `never_slots` names (jobs.placement).
    activeDeadlineSeconds is settings.startup_job_timeout. Raises JobSpecError for a slot spec it
    cannot run (unknown power method, missing block, a Secret in another namespace).
    """
    c, s, g = as_dict(claim), as_dict(slot), as_dict(group)
    return _job(STARTUP, startup_job_name(name_of(c)), _owner_reference(c, names.CLAIM_KIND), c, s, g, settings,
                namespace=namespace, image=image, force=False, service_account=service_account,
                ttl_seconds_after_finished=ttl_seconds_after_finished, allowed_images=allowed_images,
                allowed_service_accounts=allowed_service_accounts, slots=slots, never_slots=never_slots,
                registered=registered)


def shutdown_job(claim: Any | None, slot: Any, group: Any, settings: Any, *, force: bool, namespace: str,
                 image: str, number: int | None = None, episode: str | None = None,
                 service_account: str = DEFAULT_SERVICE_ACCOUNT,
                 ttl_seconds_after_finished: int = DEFAULT_TTL_AFTER_FINISHED,
                 allowed_images: Iterable[str] = (), allowed_service_accounts: Iterable[str] = (),
                 node: Any | None = None, slots: Iterable[Any] = (),
                 never_slots: Iterable[str] = (), registered: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A shutdown Job: cordon, drain and power the machine off (`force`: skip to the hard power-off).

    Owned by the claim that asked for it, or by the slot when no claim did (an unwanted machine).
    `node` is the corev1 Node observed for the slot and accepted as its machine (model.boundary); without one,
    or with one carrying another machine's providerID, nothing is cordoned or drained
    (extravars.drain_target), and the Job's modules check the providerID (and refuse a control plane) again.
    `number` defaults to the owner's shutdown attempts + 1 (claim status.shutdownAttempts, slot
    status.shutdown.attempts), so the caller increments the counter after the create succeeds (or
    meets 409 AlreadyExists) and a retried pass lands on the same name. See naming.shutdown_job_name
    for `episode`. `slots`, `never_slots` and `registered` as startup_job's (`node` is avoided too).
    """
    c = as_dict(claim) if claim is not None else None
    s, g = as_dict(slot), as_dict(group)
    if c:
        owner, owner_name = _owner_reference(c, names.CLAIM_KIND), name_of(c)
        done = dig(c, "status", "shutdownAttempts", default=0)
    else:
        owner, owner_name = _owner_reference(s, names.SLOT_KIND), name_of(s)
        done = dig(s, "status", "shutdown", "attempts", default=0)
    name = shutdown_job_name(owner_name, number if number is not None else int(done) + 1, episode, slot_owned=not c)
    return _job(SHUTDOWN, name, owner, c, s, g, settings, namespace=namespace, image=image, force=force,
                service_account=service_account, ttl_seconds_after_finished=ttl_seconds_after_finished,
                allowed_images=allowed_images, allowed_service_accounts=allowed_service_accounts,
                node=as_dict(node) if node is not None else None, slots=slots, never_slots=never_slots,
                registered=registered)
