# -*- coding: utf-8 -*-
# Copyright: homecluster maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Drain one node through the Eviction API (policy/v1), the way ``kubectl drain`` does.

``classify`` is pure: which pods are evicted, which are left alone (DaemonSet and mirror
pods) and which block the drain (emptyDir data or no controller, unless allowed).
``Drainer`` does the I/O: it evicts (or, with ``disable_eviction``, deletes), retries the 429s a
PodDisruptionBudget answers until the timeout, and waits until evicted pods are really gone -- except
pods whose deletion has been pending longer than ``skip_wait_for_delete_timeout`` (a NotReady node's
kubelet never confirms a deletion). ``pod_list_selectors`` is pure. Clocks and sleep are injected.
"""
from __future__ import annotations

import datetime
import time

from ansible_collections.homecluster.infra.plugins.module_utils.kube_client import ApiException, api_error

MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
FINISHED_PHASES = ("Succeeded", "Failed")


def pod_key(pod: dict) -> str:
    meta = pod.get("metadata") or {}
    return "%s/%s" % (meta.get("namespace"), meta.get("name"))


def _controller(pod: dict):
    for ref in (pod.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return ref
    return None


def classify(pods: list, delete_emptydir_data: bool, force: bool) -> dict:
    """Split a node's pods (as API dicts, camelCase) into evict / skipped / blocked.

    skipped and blocked are lists of {"pod": "ns/name", "reason": text}.
    """
    out = {"evict": [], "skipped": [], "blocked": []}
    for pod in pods:
        meta = pod.get("metadata") or {}
        key = pod_key(pod)
        if MIRROR_ANNOTATION in (meta.get("annotations") or {}):
            out["skipped"].append({"pod": key, "reason": "mirror pod (static, managed by the kubelet)"})
            continue
        owner = _controller(pod)
        if owner and owner.get("kind") == "DaemonSet":
            out["skipped"].append({"pod": key, "reason": "DaemonSet-managed"})
            continue
        finished = (pod.get("status") or {}).get("phase") in FINISHED_PHASES
        if not finished:
            if owner is None and not force:
                out["blocked"].append({"pod": key, "reason": "not managed by a controller (set force to evict it; it will not come back)"})
                continue
            volumes = (pod.get("spec") or {}).get("volumes") or []
            if not delete_emptydir_data and any(v.get("emptyDir") is not None for v in volumes):
                out["blocked"].append({"pod": key, "reason": "has emptyDir data (set delete_emptydir_data to evict it; the data is lost)"})
                continue
        out["evict"].append(pod)
    return out


def pod_list_selectors(node: str, pod_selectors=None, pod_field_selectors=None) -> dict:
    """The label and field selectors that list the node's pods to drain (pure): the node's own field
    selector always, AND-ed with the user's; ``label_selector`` is None when there is none."""
    fields = ["spec.nodeName=%s" % node] + [f for f in (pod_field_selectors or []) if f]
    labels = [selector for selector in (pod_selectors or []) if selector]
    return {"field_selector": ",".join(fields), "label_selector": ",".join(labels) or None}


def deletion_pending_for(deletion_timestamp, now: float):
    """Seconds since a pod's deletionTimestamp (RFC 3339 as the API writes it, "2026-12-05T16:00:00Z"), or None
    when it is not being deleted or the stamp cannot be read."""
    if not isinstance(deletion_timestamp, str):
        return None
    try:
        stamp = datetime.datetime.strptime(deletion_timestamp[:19], "%Y-%m-%dT%H:%M:%S")
    except ValueError:
        return None
    return now - stamp.replace(tzinfo=datetime.timezone.utc).timestamp()


class DrainError(Exception):
    """The drain could not finish; ``result`` holds what was done so far."""

    def __init__(self, message: str, result: dict) -> None:
        super().__init__(message)
        self.result = result


class Drainer:
    def __init__(self, api, node: str, timeout: float, grace_period=None, retry_interval: float = 1.0,
                 clock=time.monotonic, sleep=time.sleep, pod_selectors=None, pod_field_selectors=None,
                 disable_eviction: bool = False, skip_wait_for_delete_timeout=None, wall_clock=time.time) -> None:
        self.api = api
        self.node = node
        self.timeout = float(timeout)
        self.grace_period = grace_period
        self.retry_interval = retry_interval
        self.clock = clock
        self.sleep = sleep
        self.selectors = pod_list_selectors(node, pod_selectors, pod_field_selectors)
        self.disable_eviction = disable_eviction
        self.skip_wait = skip_wait_for_delete_timeout
        self.wall_clock = wall_clock

    def list_pods(self) -> list:
        try:
            return self.api.list_pods(**self.selectors)
        except ApiException as exc:
            raise DrainError(api_error(exc, "listing the pods of node %s" % self.node), {})

    def _delete(self, pod: dict):
        """Delete one pod directly (disable_eviction): no PodDisruptionBudget is consulted."""
        meta = pod["metadata"]
        try:
            self.api.delete_pod(meta["namespace"], meta["name"], self.grace_period)
            return "evicted"
        except ApiException as exc:
            if exc.status == 404:
                return "gone"
            raise DrainError(api_error(exc, "deleting pod %s from node %s" % (pod_key(pod), self.node)), {})

    def _evict(self, pod: dict):
        """Ask for one eviction. Returns "evicted", "gone", or the reason it must be retried."""
        if self.disable_eviction:
            return self._delete(pod)
        meta = pod["metadata"]
        try:
            self.api.evict_pod(meta["namespace"], meta["name"], self.grace_period)
            return "evicted"
        except ApiException as exc:
            if exc.status == 404:
                return "gone"
            if exc.status == 429:  # a PodDisruptionBudget does not allow it now: retry
                return "blocked by a PodDisruptionBudget (HTTP 429)"
            raise DrainError(api_error(exc, "evicting pod %s from node %s" % (pod_key(pod), self.node)), {})

    def _gone(self, pod: dict):
        """True when the pod is gone, "left" when its deletion has been pending longer than
        skip_wait_for_delete_timeout (not waited for any more), else False."""
        meta = pod["metadata"]
        try:
            current = self.api.read_pod(meta["namespace"], meta["name"])
        except ApiException as exc:
            if exc.status == 404:
                return True
            raise DrainError(api_error(exc, "reading pod %s" % pod_key(pod)), {})
        current_meta = current.get("metadata") or {}
        if current_meta.get("uid") != meta.get("uid"):
            return True  # same name, new pod: the old one is gone
        if self.skip_wait is not None:
            pending = deletion_pending_for(current_meta.get("deletionTimestamp"), self.wall_clock())
            if pending is not None and pending >= self.skip_wait:
                return "left"
        return False

    def run(self, delete_emptydir_data: bool, force: bool, check_mode: bool) -> dict:
        started = self.clock()
        plan = classify(self.list_pods(), delete_emptydir_data, force)
        result = {"node": self.node, "evicted": [], "remaining": [], "skipped": plan["skipped"],
                  "blocked": plan["blocked"], "left_terminating": [], "changed": False}
        if plan["blocked"]:
            result["remaining"] = [b["pod"] for b in plan["blocked"]]
            raise DrainError("refusing to drain node %s: %s" % (
                self.node, "; ".join("%s %s" % (b["pod"], b["reason"]) for b in plan["blocked"])), result)
        if check_mode:
            result["evicted"] = [pod_key(p) for p in plan["evict"]]
            result["changed"] = bool(plan["evict"])
            return result
        deadline = started + self.timeout
        pending = {pod_key(p): p for p in plan["evict"]}
        waiting = {}
        reasons = {}
        while pending or waiting:
            for key, pod in list(pending.items()):
                outcome = self._evict(pod)
                if outcome in ("evicted", "gone"):
                    del pending[key]
                    waiting[key] = pod
                    result["evicted"].append(key)
                    result["changed"] = True
                else:
                    reasons[key] = outcome
            for key, pod in list(waiting.items()):
                gone = self._gone(pod)
                if gone:
                    del waiting[key]
                if gone == "left":
                    result["left_terminating"].append(key)
            if not (pending or waiting):
                break
            left = deadline - self.clock()
            if left <= 0:
                break
            self.sleep(min(self.retry_interval, left))
        result["elapsed"] = round(self.clock() - started, 3)
        if pending or waiting:
            for key in pending:
                result["remaining"].append(key)
            for key in waiting:
                result["remaining"].append(key)
                reasons.setdefault(key, "evicted but still terminating")
            raise DrainError("draining node %s timed out after %.0f s; %d pod(s) remain: %s" % (
                self.node, self.timeout, len(result["remaining"]),
                "; ".join("%s (%s)" % (k, reasons.get(k, "not evicted")) for k in result["remaining"])), result)
        return result
