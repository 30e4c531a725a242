# -*- coding: utf-8 -*-
# Copyright: homecluster maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure decision of node_cordon: the patch (if any) that takes a Node to the requested state.

The mark annotation lets the system lift only the cordons it placed itself, never a
person's maintenance cordon.
"""
from __future__ import annotations

# Mirrors homecluster.names.ANNOTATION_CORDONED_BY / CORDONED_BY_VALUE (the collection
# cannot import the controller package; a unit test checks the two agree).
ANNOTATION_CORDONED_BY = "infra.homecluster.dev/cordoned-by"
CORDONED_BY_VALUE = "homecluster"


def decide(state: str, unschedulable: bool, annotations: dict, mark: bool, only_if_marked: bool) -> dict:
    """Return {"patch": dict or None, "refused": bool, "message": str}.

    - cordon: set spec.unschedulable; with ``mark`` also set the annotation (a Node that is
      already cordoned by someone else is left unmarked, so its cordon stays theirs).
    - uncordon: clear spec.unschedulable and our annotation; with ``only_if_marked`` a
      cordon without our mark is refused (reported, not lifted).
    """
    annotations = annotations or {}
    marked = annotations.get(ANNOTATION_CORDONED_BY) == CORDONED_BY_VALUE
    if state == "cordoned":
        if unschedulable:
            return {"patch": None, "refused": False,
                    "message": "already cordoned" + (" by homecluster" if marked else "")}
        patch = {"spec": {"unschedulable": True}}
        if mark:
            patch["metadata"] = {"annotations": {ANNOTATION_CORDONED_BY: CORDONED_BY_VALUE}}
        return {"patch": patch, "refused": False, "message": "cordoned"}
    if state != "uncordoned":
        raise ValueError("unknown state %r; expected cordoned or uncordoned" % state)
    if not unschedulable:
        if marked:  # a stale mark on a schedulable node: clean it up
            return {"patch": {"metadata": {"annotations": {ANNOTATION_CORDONED_BY: None}}},
                    "refused": False, "message": "not cordoned; removed a stale mark"}
        return {"patch": None, "refused": False, "message": "already schedulable"}
    if only_if_marked and not marked:
        return {"patch": None, "refused": True,
                "message": "cordoned by someone else (no %s=%s annotation); left cordoned"
                % (ANNOTATION_CORDONED_BY, CORDONED_BY_VALUE)}
    patch = {"spec": {"unschedulable": False}}
    if marked:
        patch["metadata"] = {"annotations": {ANNOTATION_CORDONED_BY: None}}
    return {"patch": patch, "refused": False, "message": "uncordoned"}
