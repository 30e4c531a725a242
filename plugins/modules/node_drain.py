#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: homecluster maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
---
module: node_drain
short_description: Evict the pods of a Kubernetes node through the Eviction API
version_added: "0.1.0"
description:
  - Lists the pods of one node (field selector C(spec.nodeName)) and evicts them through the Eviction API
    (C(policy/v1)), so PodDisruptionBudgets are honoured. An eviction a budget refuses (HTTP 429) is retried until
    O(timeout); then the module fails and lists the pods that remain.
  - DaemonSet-managed pods and mirror (static) pods are left alone, as C(kubectl drain --ignore-daemonsets) does.
  - Like C(kubectl drain), the module refuses to drain a node with pods that use C(emptyDir) volumes unless
    O(delete_emptydir_data=true), and with pods no controller manages unless O(force=true). It refuses before it
    evicts anything.
  - Waits until every evicted pod is gone (deleted, or replaced by a pod with a new UID), except, with
    O(skip_wait_for_delete_timeout), pods whose deletion has been pending longer than that (the kubelet of a
    NotReady node never confirms a deletion, and such a drain would otherwise wait its full O(timeout)).
  - O(pod_selectors) and O(pod_field_selectors) limit the drain to some of the node's pods.
  - The module does not cordon the node; run M(homecluster.infra.node_cordon) first.
author: homecluster maintainers (@homecluster-dev)
extends_documentation_fragment:
  - homecluster.infra.kube
  - homecluster.infra.provider_id
attributes:
  check_mode:
    support: full
    description: Lists the pods it would evict, skip or refuse, without evicting.
  diff_mode:
    support: none
    description: No diff is reported.
seealso:
  - module: kubernetes.core.k8s_drain
    description: >-
      Cordon and drain in one general-purpose module; use it in a playbook of your own. Use this one when a
      NotReady node must be drained without waiting its whole timeout (O(skip_wait_for_delete_timeout)), when
      only some pods are to go (O(pod_selectors)), or to find the Node by its provider ID.
  - module: homecluster.infra.node_cordon
    description: Cordon the node first; this module does not.
options:
  name:
    description: Name of the corev1 Node to drain (its C(metadata.name), a DNS subdomain).
    type: str
    required: true
  timeout:
    description: Seconds to evict the pods and wait for them to be gone.
    type: int
    default: 300
  grace_period:
    description: Termination grace period for the evicted pods, in seconds; the pods' own when omitted.
    type: int
  delete_emptydir_data:
    description: Evict pods that use emptyDir volumes (their data is lost).
    type: bool
    default: false
  force:
    description: Evict pods that no controller manages (they are not recreated).
    type: bool
    default: false
  retry_interval:
    description: Seconds between two rounds of evictions that a PodDisruptionBudget refused; above 0 and at most O(timeout).
    type: float
    default: 1.0
  pod_selectors:
    description:
      - Label selectors (for example V(app=web) or V(tier in (cache,web))); only the node's pods that match all of
        them are drained. The other pods stay, and the drain succeeds without them.
    type: list
    elements: str
    aliases: [label_selectors]
  pod_field_selectors:
    description:
      - Field selectors (for example V(metadata.namespace=batch)), AND-ed with the node's own
        C(spec.nodeName=<name>); only the pods that match are drained.
    type: list
    elements: str
  disable_eviction:
    description:
      - Delete the pods instead of evicting them. PodDisruptionBudgets are then B(not) honoured, as with
        C(kubectl drain --disable-eviction).
    type: bool
    default: false
  skip_wait_for_delete_timeout:
    description:
      - Stop waiting for a pod whose deletion has been pending (its C(metadata.deletionTimestamp)) for at least this
        many seconds, as C(kubectl drain --skip-wait-for-delete-timeout) does; such pods are listed in
        RV(left_terminating) and the drain succeeds.
      - Meant for a NotReady node, whose kubelet never confirms the deletions. When omitted, every evicted pod is
        waited for until O(timeout).
    type: int
"""

EXAMPLES = r"""
- name: Drain only the web pods of a node, deleting them without the Eviction API
  homecluster.infra.node_drain:
    name: worker-01
    pod_selectors:
      - app=web
    disable_eviction: true

- name: Drain a dead (NotReady) node without waiting for deletions its kubelet will never confirm
  homecluster.infra.node_drain:
    name: worker-01
    skip_wait_for_delete_timeout: 30
    timeout: 120

- name: Drain a node for five minutes, evicting emptyDir pods too
  homecluster.infra.node_drain:
    name: worker-01
    timeout: 300
    delete_emptydir_data: true

- name: See what a drain would evict
  homecluster.infra.node_drain:
    name: worker-01
  check_mode: true
  register: would
"""

RETURN = r"""
evicted:
  description: Pods evicted (in check mode, that would be evicted), as C(namespace/name).
  returned: always
  type: list
  elements: str
  sample: [default/web-7c9d-abcde]
remaining:
  description: Pods still on the node when the module gave up, as C(namespace/name).
  returned: always
  type: list
  elements: str
  sample: [default/db-0]
skipped:
  description: Pods left alone on purpose, with the reason.
  returned: always
  type: list
  elements: dict
  sample: [{pod: kube-system/kube-proxy-x2b9z, reason: DaemonSet-managed}]
blocked:
  description: Pods that made the module refuse the drain, with the reason.
  returned: always
  type: list
  elements: dict
  sample: []
left_terminating:
  description:
    - Evicted pods not waited for any more, as C(namespace/name), because their deletion had been pending for
      O(skip_wait_for_delete_timeout) seconds.
  returned: always
  type: list
  elements: str
  sample: [default/web-7c9d-abcde]
"""

from ansible_collections.homecluster.infra.plugins.module_utils import kube_client
from ansible_collections.homecluster.infra.plugins.module_utils.arg_checks import (
    CheckedModule, interval_problem, node_name_problem, selectors_problem,
)
from ansible_collections.homecluster.infra.plugins.module_utils.kube_drain import DrainError, Drainer


def main() -> None:
    spec = dict(
        name=dict(type="str", required=True),
        timeout=dict(type="int", default=300),
        grace_period=dict(type="int"),
        delete_emptydir_data=dict(type="bool", default=False),
        force=dict(type="bool", default=False),
        retry_interval=dict(type="float", default=1.0),
        provider_id=dict(type="str"),
        pod_selectors=dict(type="list", elements="str", aliases=["label_selectors"]),
        pod_field_selectors=dict(type="list", elements="str"),
        disable_eviction=dict(type="bool", default=False),
        skip_wait_for_delete_timeout=dict(type="int"),
    )
    spec.update(kube_client.KUBE_ARGS)
    module = CheckedModule(argument_spec=spec, supports_check_mode=True)
    p = module.params
    if module.problem:
        module.fail_json(msg=module.problem)
    if p["timeout"] <= 0:
        module.fail_json(msg="timeout must be a positive number of seconds, got %d" % p["timeout"])
    if p["grace_period"] is not None and p["grace_period"] < 0:
        module.fail_json(msg="grace_period must be zero or more seconds, got %d" % p["grace_period"])
    if p["skip_wait_for_delete_timeout"] is not None and p["skip_wait_for_delete_timeout"] <= 0:
        module.fail_json(msg="skip_wait_for_delete_timeout must be a positive number of seconds (omit it to wait for "
                             "every pod), got %d" % p["skip_wait_for_delete_timeout"])
    problem = (node_name_problem(p["name"]) or interval_problem("retry_interval", p["retry_interval"], p["timeout"])
               or selectors_problem("pod_selectors", p["pod_selectors"])
               or selectors_problem("pod_field_selectors", p["pod_field_selectors"]))
    if problem:
        module.fail_json(msg=problem)
    try:
        api = kube_client.core_api(p)
    except kube_client.KubeError as exc:
        module.fail_json(msg="node %s: %s" % (p["name"], exc))
    try:
        node = api.read_node(p["name"])
    except kube_client.ApiException as exc:
        if p["provider_id"] or exc.status != 404:
            module.fail_json(msg=kube_client.api_error(exc, "reading node %s" % p["name"]))
        node = None  # no such Node and no providerID to check: the drainer reports it as before
    if node is not None:
        refusal = kube_client.boundary_refusal(node, p["name"], p["provider_id"])
        if refusal:
            module.fail_json(msg=refusal, evicted=[], remaining=[], skipped=[], blocked=[], left_terminating=[])
    drainer = Drainer(api, p["name"], p["timeout"], p["grace_period"], p["retry_interval"],
                      pod_selectors=p["pod_selectors"], pod_field_selectors=p["pod_field_selectors"],
                      disable_eviction=p["disable_eviction"],
                      skip_wait_for_delete_timeout=p["skip_wait_for_delete_timeout"])
    try:
        result = drainer.run(p["delete_emptydir_data"], p["force"], module.check_mode)
    except DrainError as exc:
        fields = dict(evicted=[], remaining=[], skipped=[], blocked=[], left_terminating=[])
        fields.update(exc.result)
        fields.pop("changed", None)
        module.fail_json(msg=str(exc), changed=bool(fields["evicted"]), **fields)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
