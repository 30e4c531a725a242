"""Server-side `Table` output (what `kubectl get` asks for), as meta.k8s.io/v1 Table. Pure.

Custom resources use their CRD's additionalPrinterColumns (dates shown as an age, like the real server);
built-ins get the columns kubectl users know (nodes: NAME STATUS ROLES AGE VERSION, pods: NAME READY STATUS
RESTARTS AGE, ...). Anything else gets NAME and AGE.
"""
from __future__ import annotations

import datetime as dt
import json
from typing import Any, Callable

from . import jsonpath, meta
from .resources import ResourceType

Column = tuple[str, str, str, int]  # name, type, description, priority
Row = Callable[[dict[str, Any], dt.datetime], list[Any]]


def _col(name: str, type_: str = "string", description: str = "", priority: int = 0, fmt: str = "") -> dict:
    return {"name": name, "type": type_, "format": fmt, "description": description, "priority": priority}


def _name(o: dict) -> str:
    return o["metadata"]["name"]


def _age(o: dict, at: dt.datetime) -> str:
    return meta.age(o["metadata"].get("creationTimestamp"), at)


def _condition(o: dict, type_: str) -> dict | None:
    for c in (o.get("status") or {}).get("conditions") or []:
        if c.get("type") == type_:
            return c
    return None


def _node_row(o: dict, at: dt.datetime) -> list[Any]:
    ready = _condition(o, "Ready")
    status = "Unknown" if ready is None or ready.get("status") == "Unknown" else (
        "Ready" if ready.get("status") == "True" else "NotReady")
    if (o.get("spec") or {}).get("unschedulable"):
        status += ",SchedulingDisabled"
    labels = o["metadata"].get("labels") or {}
    roles = sorted({k.split("/", 1)[1] for k in labels if k.startswith("node-role.kubernetes.io/") and "/" in k}
                   | ({labels["kubernetes.io/role"]} if labels.get("kubernetes.io/role") else set()))
    version = ((o.get("status") or {}).get("nodeInfo") or {}).get("kubeletVersion", "")
    return [_name(o), status, ",".join(r for r in roles if r) or "<none>", _age(o, at), version]


def _pod_row(o: dict, at: dt.datetime) -> list[Any]:
    spec, status = o.get("spec") or {}, o.get("status") or {}
    statuses = status.get("containerStatuses") or []
    ready = sum(1 for c in statuses if c.get("ready"))
    total = len(spec.get("containers") or [])
    phase = status.get("reason") or status.get("phase") or "Pending"
    for c in statuses:
        state = c.get("state") or {}
        if (state.get("waiting") or {}).get("reason"):
            phase = state["waiting"]["reason"]
        elif (state.get("terminated") or {}).get("reason") and phase not in ("Running",):
            phase = state["terminated"]["reason"]
    if phase == "Succeeded":
        phase = "Completed"
    if o["metadata"].get("deletionTimestamp"):
        phase = "Terminating"
    restarts = sum(int(c.get("restartCount") or 0) for c in statuses)
    return [_name(o), f"{ready}/{total}", phase, restarts, _age(o, at),
            status.get("podIP") or "<none>", spec.get("nodeName") or "<none>"]


def _job_row(o: dict, at: dt.datetime) -> list[Any]:
    spec, status = o.get("spec") or {}, o.get("status") or {}
    state = "Running"
    for cond in ("Failed", "Complete", "FailureTarget", "SuccessCriteriaMet", "Suspended"):
        c = _condition(o, cond)
        if c and c.get("status") == "True":
            state = {"FailureTarget": "FailureTarget", "SuccessCriteriaMet": "SuccessCriteriaMet"}.get(cond, cond)
            break
    completions = f"{status.get('succeeded', 0)}/{spec.get('completions', 1)}"
    start, end = meta.parse_time(status.get("startTime", "")), meta.parse_time(status.get("completionTime", ""))
    duration = meta.human_duration(((end or at) - start).total_seconds()) if start else ""
    return [_name(o), state, completions, duration, _age(o, at)]


def _pdb_row(o: dict, at: dt.datetime) -> list[Any]:
    spec, status = o.get("spec") or {}, o.get("status") or {}
    return [_name(o), str(spec.get("minAvailable", "N/A")), str(spec.get("maxUnavailable", "N/A")),
            status.get("disruptionsAllowed", 0), _age(o, at)]


def _ns_row(o: dict, at: dt.datetime) -> list[Any]:
    return [_name(o), (o.get("status") or {}).get("phase", "Active"), _age(o, at)]


def _event_row(o: dict, at: dt.datetime) -> list[Any]:
    last = o.get("lastTimestamp") or o.get("eventTime") or o["metadata"].get("creationTimestamp")
    inv = o.get("involvedObject") or o.get("regarding") or {}
    return [meta.age(last, at), o.get("type", ""), o.get("reason", ""),
            f"{(inv.get('kind') or '').lower()}/{inv.get('name', '')}", o.get("message") or o.get("note", "")]


BUILTIN: dict[tuple[str, str], tuple[list[dict], Row]] = {
    ("", "nodes"): ([_col("Name", fmt="name"), _col("Status"), _col("Roles"), _col("Age"), _col("Version")],
                    _node_row),
    ("", "pods"): ([_col("Name", fmt="name"), _col("Ready"), _col("Status"), _col("Restarts", "string"),
                    _col("Age"), _col("IP", priority=1), _col("Node", priority=1)], _pod_row),
    ("batch", "jobs"): ([_col("Name", fmt="name"), _col("Status"), _col("Completions"), _col("Duration"),
                         _col("Age")], _job_row),
    ("policy", "poddisruptionbudgets"): ([_col("Name", fmt="name"), _col("Min Available"),
                                          _col("Max Unavailable"), _col("Allowed Disruptions", "integer"),
                                          _col("Age")], _pdb_row),
    ("", "namespaces"): ([_col("Name", fmt="name"), _col("Status"), _col("Age")], _ns_row),
    ("", "events"): ([_col("Last Seen"), _col("Type"), _col("Reason"), _col("Object"), _col("Message")],
                     _event_row),
}


def _cell(values: list[Any], type_: str, at: dt.datetime) -> Any:
    if not values or values[0] is None:
        return None
    v = values[0]
    if type_ == "date" and isinstance(v, str):
        return meta.age(v, at)
    if isinstance(v, (dict, list)):
        return json.dumps(v, separators=(",", ":"))
    if type_ in ("integer", "number", "boolean"):
        return v
    return v if isinstance(v, str) else json.dumps(v)


def _custom(rt: ResourceType, version: str) -> tuple[list[dict], Row] | None:
    columns = rt.printer_columns.get(version)
    if columns is None:
        return None
    defs = [_col("Name", fmt="name", description="Name must be unique within a namespace.")]
    for c in columns:
        defs.append(_col(c["name"], c.get("type", "string"), c.get("description")
                         or f"Custom resource definition column (in JSONPath format): {c['jsonPath']}",
                         int(c.get("priority", 0)), c.get("format", "")))

    def row(o: dict, at: dt.datetime) -> list[Any]:
        cells = [_name(o)]
        for c in columns:
            try:
                cells.append(_cell(jsonpath.evaluate(o, c["jsonPath"]), c.get("type", "string"), at))
            except ValueError:
                cells.append(None)
        return cells
    return defs, row


def _default() -> tuple[list[dict], Row]:
    return [_col("Name", fmt="name"), _col("Age")], lambda o, at: [_name(o), _age(o, at)]


def table(rt: ResourceType, version: str, objects: list[dict[str, Any]], resource_version: str,
          include_object: str = "Metadata", at: dt.datetime | None = None) -> dict[str, Any]:
    at = at or meta.now()
    defs, row = _custom(rt, version) or BUILTIN.get(rt.key) or _default()
    rows = []
    for o in objects:
        entry: dict[str, Any] = {"cells": row(o, at)}
        if include_object == "Object":
            entry["object"] = o
        elif include_object != "None":
            entry["object"] = {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                               "metadata": o["metadata"]}
        rows.append(entry)
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {"resourceVersion": resource_version},
            "columnDefinitions": defs, "rows": rows}
