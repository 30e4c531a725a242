"""Machine fault knobs, set from an annotation on the slot: `lab.homecluster.dev/fault`.

Why an annotation: it is the one control surface a person already has in hand (kubectl), it is
visible next to the slot it breaks (`kubectl get slot worker-02 -o yaml`), it needs no extra port,
and it is metadata, so it does not contradict "Git is the only writer of a slot's spec". The lab
reads it; the operator never does.

    kubectl annotate slot worker-02 lab.homecluster.dev/fault=never-boots
    kubectl annotate slot worker-02 lab.homecluster.dev/fault=flaps=3,wrong-credentials --overwrite
    kubectl annotate slot worker-02 lab.homecluster.dev/fault-             # heal: every knob back off

The value is a comma-separated list of knobs; a knob that takes a number is written `knob=seconds`.
The annotation states the whole set: knobs not named are off. Parsing is pure (`parse`); `FaultSync`
applies the result to the machines.
"""
from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from homecluster_lab.machines.boot import Faults

log = logging.getLogger(__name__)

ANNOTATION = "lab.homecluster.dev/fault"

# knob name in the annotation -> (Faults field, takes seconds)
KNOBS: dict[str, tuple[str, bool]] = {
    "bmc-unreachable": ("bmc_unreachable", False),
    "wrong-credentials": ("wrong_credentials", False),
    "never-boots": ("never_boots", False),
    "boots-but-never-registers": ("boots_but_never_registers", False),
    "taints-never-clear": ("taints_never_clear", False),
    "flaps": ("flaps", False),  # flaps=S also sets the period
    "powers-off-while-ready": ("powers_off_while_ready", True),
    "ignores-graceful-shutdown": ("ignores_graceful_shutdown", False),
    "ignores-power-commands": ("ignores_power_commands", False),
    "power-readback-lies": ("power_readback_lies", False),
}


class FaultSpecError(ValueError):
    """An annotation value the lab cannot read; the message names the slot, the knob and the fix."""


def parse(slot: str, value: str | None) -> Faults:
    """The complete set of fault knobs an annotation value asks for (no value: a healthy machine)."""
    changes: dict[str, Any] = {}
    for raw in (value or "").split(","):
        item = raw.strip()
        if not item:
            continue
        knob, has_arg, arg = (part.strip() for part in item.partition("="))
        knob = knob.lower()
        if knob not in KNOBS:
            raise FaultSpecError(
                f"slot {slot}: annotation {ANNOTATION}: unknown knob {knob!r}; use one or more of "
                f"{', '.join(KNOBS)} separated by commas")
        field, takes_seconds = KNOBS[knob]
        seconds = _seconds(slot, knob, arg) if has_arg else None
        if takes_seconds:
            if seconds is None:
                raise FaultSpecError(f"slot {slot}: annotation {ANNOTATION}: {knob} needs a number of seconds, "
                                     f"e.g. {knob}=20")
            changes[field] = seconds
        else:
            changes[field] = True
            if knob == "flaps" and seconds is not None:
                changes["flap_seconds"] = seconds
            elif seconds is not None:
                raise FaultSpecError(f"slot {slot}: annotation {ANNOTATION}: {knob} takes no value; write just {knob}")
    return Faults(**changes)


def _seconds(slot: str, knob: str, arg: str) -> float:
    try:
        seconds = float(arg)
    except ValueError:
        seconds = -1.0
    if seconds < 0 or seconds != seconds:
        raise FaultSpecError(f"slot {slot}: annotation {ANNOTATION}: {knob}={arg!r} is not a number of "
                             f"seconds >= 0; write e.g. {knob}=20")
    return seconds


def describe(faults: Faults) -> str:
    """The knobs that are on, as the annotation would write them ("" for a healthy machine)."""
    healthy = Faults()
    out = []
    for knob, (field, _) in KNOBS.items():
        value = getattr(faults, field)
        if value == getattr(healthy, field):
            continue
        if knob == "flaps" and faults.flap_seconds != healthy.flap_seconds:
            out.append(f"flaps={faults.flap_seconds:g}")
        elif isinstance(value, bool):
            out.append(knob)
        else:
            out.append(f"{knob}={value:g}")
    return ",".join(out)


class FaultSync:
    """Applies the annotations of slots to their machines, once per change of the annotation.

    `apply(slots)` is called with the current slot objects (the lab polls its in-memory store); a
    machine is touched only when its slot's annotation changed since the last call, and a bad value
    is reported once (through `report`) and leaves the machine as it was.
    """

    def __init__(self, machines: Mapping[str, Any], report: Callable[[str], None]):
        self._machines = machines  # slot name -> SimMachine (anything with set_faults)
        self._report = report
        self._seen: dict[str, str | None] = {}

    def apply(self, slots: Iterable[Mapping[str, Any]]) -> list[str]:
        """Returns the names of the machines whose knobs changed."""
        changed = []
        for slot in slots:
            meta = slot.get("metadata") or {}
            name = meta.get("name", "")
            value = (meta.get("annotations") or {}).get(ANNOTATION)
            if self._seen.get(name, None) == value or name not in self._machines:
                continue
            self._seen[name] = value
            try:
                faults = parse(name, value)
            except FaultSpecError as exc:
                self._report(str(exc))
                continue
            self._machines[name].set_faults(**dataclasses.asdict(faults))
            self._report(f"slot {name}: fault knobs now {describe(faults) or 'none (healthy)'}")
            changed.append(name)
        return changed
