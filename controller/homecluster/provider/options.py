"""NodeGroupGetOptions: per-pool autoscaler options, answered in both duration encodings.

Why it is shaped like this: CA replaces its defaults with EVERY field of a returned message (no
per-field merge), so fields the Group does not set are echoed from the request's `defaults`;
CA <= 1.34.1 dereferences the legacy nanosecond durations (fields 3/4/5) without a nil check,
and CA >= 1.35 reads only google.protobuf.Duration (8/9/10), so both are always filled. Groups
without spec.autoscaling get UNIMPLEMENTED, which makes CA use its own flags for everything --
the safest answer, and it avoids CA 1.35's MaxNodeStartupTime=0 gap (issue #10245).

MaxNodeProvisionTime is the claim's own budget, max(boot floor, spec.maxNodeProvisionTime)
(homecluster.model.deadlines.boot_window): the specification makes the Group's value a floor, never a
ceiling below the operator's number, and the autoscaler must not give up on a slot whose claim
is still inside its deadline.
"""
from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from homecluster.durations import DurationError, parse_duration
from homecluster.limits import MAX_SCALE_DOWN_TIME, clamp_duration
from homecluster.model.deadlines import GroupSpecError, boot_window
from homecluster.model.objects import dig, name_of
from homecluster.model.settings import Settings
from homecluster.provider.errors import precondition, unimplemented
from homecluster.provider.proto import externalgrpc_pb2 as pb

Obj = Mapping[str, Any]

# (new Duration field, legacy K8sDuration field, Group spec.autoscaling key or None for maxNodeProvisionTime)
_DURATIONS = (
    ("scaleDownUnneededDuration", "scaleDownUnneededTime", "scaleDownUnneededTime"),
    ("scaleDownUnreadyDuration", "scaleDownUnreadyTime", "scaleDownUnreadyTime"),
    ("MaxNodeProvisionDuration", "MaxNodeProvisionTime", None),
)
_PLAIN = ("scaleDownUtilizationThreshold", "scaleDownGpuUtilizationThreshold",
          "zeroOrMaxNodeScaling", "ignoreDaemonSetsUtilization")


def _default_duration(defaults: pb.NodeGroupAutoscalingOptions, new: str, legacy: str) -> timedelta:
    """A default as CA sent it: the new field when present, else the legacy nanoseconds, else 0."""
    if defaults.HasField(new):
        return getattr(defaults, new).ToTimedelta()
    if defaults.HasField(legacy):
        return timedelta(microseconds=getattr(defaults, legacy).duration // 1000)
    return timedelta(0)


def _set_duration(options: pb.NodeGroupAutoscalingOptions, new: str, legacy: str, value: timedelta) -> None:
    getattr(options, new).FromTimedelta(value)
    getattr(options, legacy).duration = (value // timedelta(microseconds=1)) * 1000


def _parse(group: Obj, path: tuple[str, ...]) -> timedelta:
    raw = dig(group, *path)
    try:
        return clamp_duration(parse_duration(raw), MAX_SCALE_DOWN_TIME)
    except DurationError as exc:
        raise precondition(f"Group {name_of(group)!r} {'.'.join(path)}: {exc}") from None


def group_options(group: Obj, defaults: pb.NodeGroupAutoscalingOptions,
                  settings: Settings | None = None) -> pb.NodeGroupAutoscalingOptions:
    """The options for one group: the Group's values over the request's defaults, every field filled."""
    settings = settings or Settings()
    auto = dig(group, "spec", "autoscaling")
    if not auto:
        raise unimplemented(f"Group {name_of(group)!r} has no spec.autoscaling: the autoscaler's own flags apply")
    out = pb.NodeGroupAutoscalingOptions()
    for key in _PLAIN:
        value = auto.get(key)
        setattr(out, key, getattr(defaults, key) if value is None else value)
    for new, legacy, key in _DURATIONS:
        if key is not None and auto.get(key) not in (None, ""):
            value = _parse(group, ("spec", "autoscaling", key))
        elif key is None and dig(group, "spec", "maxNodeProvisionTime") not in (None, ""):
            try:
                value = boot_window(group, settings)
            except GroupSpecError as exc:
                raise precondition(str(exc)) from None
        else:
            value = _default_duration(defaults, new, legacy)
        _set_duration(out, new, legacy, value)
    return out
