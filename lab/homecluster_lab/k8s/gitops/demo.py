"""`--gitops --demo`: after the scale-up and scale-down, a slot edit pushed to Git and narrated as Flux lands it.

The edit is harmless on purpose: a label on the first slot (`homecluster.dev/demo-edited: <time>`), so the
demo can be run again and again in one lab. It is a commit in the lab's clone, pushed to the repository
Flux reads, exactly as a person would push one.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from homecluster_lab.config import LabError
from homecluster_lab.demo import DemoFailed

LABEL = "homecluster.dev/demo-edited"


async def narrate_slot_edit(lab: Any, say: Callable[[str], None], timeout: float = 120) -> float:
    """Push a label on the first slot, wait until Flux applied it and the slot carries it; seconds it took."""
    slot = lab.slot_names[0]
    stamp = time.strftime("%H%M%S")
    started = time.monotonic()

    def label(obj: dict[str, Any]) -> None:
        obj["metadata"].setdefault("labels", {})[LABEL] = stamp
    revision = lab.edit_slot(slot, label, f"{slot}: demo edit {stamp}")
    say(f"pushed {revision[:12]} to {lab.git.url}: slot {slot} gets the label {LABEL}={stamp}")
    try:
        await lab.flux.applied(revision, timeout)
    except LabError as exc:
        raise DemoFailed(str(exc)) from None
    live = await lab.api.kube.get(f"/apis/infra.homecluster.dev/v2alpha1/nodes/{slot}")
    if (live["metadata"].get("labels") or {}).get(LABEL) != stamp:
        raise DemoFailed(f"Flux reports {revision[:12]} applied, yet slot {slot} lacks {LABEL}={stamp}")
    took = time.monotonic() - started
    say(f"Flux applied {revision[:12]} in {took:.1f}s: slot {slot} carries {LABEL}={stamp}; the claims and "
        f"machines did not move")
    return took
