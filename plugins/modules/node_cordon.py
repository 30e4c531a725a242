#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: homecluster maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
---
module: node_cordon
short_description: Cordon or uncordon a Kubernetes node, optionally marking the cordon as ours
version_added: "0.1.0"
description:
  - Sets or clears C(spec.unschedulable) of a corev1 Node, with a merge patch guarded by the Node's resourceVersion.
  - With O(mark=true) a cordon also sets the annotation C(infra.homecluster.dev/cordoned-by=homecluster).
    With O(only_if_marked=true) an uncordon lifts only a cordon that carries that mark, so a person's maintenance
    cordon is never lifted by the system; a refused uncordon is reported (RV(refused)) and fails only with
    O(fail_on_refusal=true).
author: homecluster maintainers (@homecluster-dev)
extends_documentation_fragment:
  - homecluster.infra.kube
  - homecluster.infra.provider_id
attributes:
  check_mode:
    support: full
    description: Reports what would change without patching the Node.
  diff_mode:
    support: none
    description: No diff is reported.
seealso:
  - module: kubernetes.core.k8s_drain
    description: >-
      Cordon, drain and uncordon in one general-purpose module; use it in a playbook of your own. Use this one
      where a system cordons: it marks its cordon, so a person's maintenance cordon is never lifted by it, and
      finds the Node by its provider ID.
  - module: homecluster.infra.node_drain
    description: Evicts the node's pods once it is cordoned.
options:
  name:
    description: Name of the corev1 Node (its C(metadata.name), a DNS subdomain).
    type: str
    required: true
  state:
    description: V(cordoned) makes the node unschedulable, V(uncordoned) schedulable.
    type: str
    choices: [cordoned, uncordoned]
    default: cordoned
  mark:
    description: On cordon, annotate the Node so that the system can later tell the cordon is its own.
    type: bool
    default: false
  only_if_marked:
    description: On uncordon, refuse to lift a cordon that does not carry the mark.
    type: bool
    default: false
  fail_on_refusal:
    description: Fail when an uncordon is refused because of O(only_if_marked).
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Cordon before a shutdown, marking the cordon as the system's
  homecluster.infra.node_cordon:
    name: worker-01
    mark: true

- name: Lift only a cordon the system placed
  homecluster.infra.node_cordon:
    name: worker-01
    state: uncordoned
    only_if_marked: true
    kubeconfig: /etc/kubeconfig
"""

RETURN = r"""
unschedulable:
  description: C(spec.unschedulable) of the Node after the module ran (or would run, in check mode).
  returned: always
  type: bool
  sample: true
marked:
  description: Whether the Node carries the cordoned-by mark afterwards.
  returned: always
  type: bool
  sample: true
refused:
  description: True when an uncordon was refused because the cordon is not ours.
  returned: always
  type: bool
  sample: false
message:
  description: What happened, in words.
  returned: always
  type: str
  sample: cordoned
"""

from ansible_collections.homecluster.infra.plugins.module_utils import kube_client
from ansible_collections.homecluster.infra.plugins.module_utils.arg_checks import (
    CheckedModule, node_name_problem,
)
from ansible_collections.homecluster.infra.plugins.module_utils.kube_cordon import (
    ANNOTATION_CORDONED_BY, CORDONED_BY_VALUE, decide,
)

_CONFLICT_RETRIES = 5
_MERGE_PATCH = "application/merge-patch+json"


def _after(node, patch):
    """The (unschedulable, marked) a Node will have once ``patch`` is applied."""
    unschedulable = bool((node.get("spec") or {}).get("unschedulable"))
    annotations = dict((node.get("metadata") or {}).get("annotations") or {})
    if patch:
        unschedulable = patch.get("spec", {}).get("unschedulable", unschedulable)
        for key, value in patch.get("metadata", {}).get("annotations", {}).items():
            if value is None:
                annotations.pop(key, None)
            else:
                annotations[key] = value
    return unschedulable, annotations.get(ANNOTATION_CORDONED_BY) == CORDONED_BY_VALUE


def main() -> None:
    spec = dict(
        name=dict(type="str", required=True),
        state=dict(type="str", default="cordoned", choices=["cordoned", "uncordoned"]),
        mark=dict(type="bool", default=False),
        only_if_marked=dict(type="bool", default=False),
        fail_on_refusal=dict(type="bool", default=False),
        provider_id=dict(type="str"),
    )
    spec.update(kube_client.KUBE_ARGS)
    module = CheckedModule(argument_spec=spec, supports_check_mode=True)
    p = module.params
    problem = module.problem or node_name_problem(p["name"])
    if problem:
        module.fail_json(msg=problem)
    try:
        api = kube_client.core_api(p)
    except kube_client.KubeError as exc:
        module.fail_json(msg="node %s: %s" % (p["name"], exc))

    for _attempt in range(_CONFLICT_RETRIES):
        try:
            node = api.read_node(p["name"])
        except kube_client.ApiException as exc:
            hint = " (no such Node; check the name)" if exc.status == 404 else ""
            module.fail_json(msg=kube_client.api_error(exc, "reading node %s" % p["name"]) + hint)
        refusal = kube_client.boundary_refusal(node, p["name"], p["provider_id"])
        if refusal:
            module.fail_json(msg=refusal, refused=True)
        metadata = node.get("metadata") or {}
        decision = decide(p["state"], bool((node.get("spec") or {}).get("unschedulable")),
                          metadata.get("annotations"), p["mark"], p["only_if_marked"])
        unschedulable, marked = _after(node, decision["patch"])
        result = dict(changed=decision["patch"] is not None, refused=decision["refused"],
                      message="node %s: %s" % (p["name"], decision["message"]),
                      unschedulable=unschedulable, marked=marked)
        if decision["refused"] and p["fail_on_refusal"]:
            module.fail_json(msg=result["message"], **{k: v for k, v in result.items() if k != "message"})
        if decision["patch"] is None or module.check_mode:
            module.exit_json(**result)
        patch = dict(decision["patch"])
        patch["metadata"] = dict(patch.get("metadata", {}), resourceVersion=metadata.get("resourceVersion"))
        try:
            api.patch_node(p["name"], patch, _MERGE_PATCH)
        except kube_client.ApiException as exc:
            if exc.status == 409:
                continue  # the Node changed since we read it: decide again
            module.fail_json(msg=kube_client.api_error(exc, "patching node %s" % p["name"]))
        module.exit_json(**result)
    module.fail_json(msg="node %s kept changing under us (%d conflicts); try again" % (p["name"], _CONFLICT_RETRIES))


if __name__ == "__main__":
    main()
