"""Deterministic names for lifecycle Jobs, and label values that always fit.

A Job's name is a pure function of its owner and its step, so a create retried after a crash
meets its own earlier Job (409 AlreadyExists) instead of starting a second power action. The three
kinds of Job end in suffixes no other kind's name can end in, whatever the owner is called:
`<claim>-startup`, `<claim>-shutdown-<n>` and, for a slot's own (unwanted machine) shutdown,
`<slot>-unwanted-<n>` -- so a claim named like its slot never needs a name the slot's Jobs hold.

Job names and label values are limited to 63 characters; a longer base is cut and suffixed with a
hash of the full text (80 bits), so two long names that share a prefix still get different results.
A hash that short can still be made to collide by someone who chooses names, so a label value is
never the identity: a Job's slot is its LABEL_SLOT (to select by) confirmed by its full name in the
ANNOTATION_SLOT_NAME annotation (`names_slot`); a Job's owner is its controller ownerReference's uid.
"""
from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any

from homecluster import names

MAX_NAME = 63
_HASH_LEN = 20  # hex digits: 80 bits
_EDGE = re.compile(r"^[^A-Za-z0-9]+|[^A-Za-z0-9]+$")


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:_HASH_LEN]


def bounded(base: str, suffix: str = "") -> str:
    """Return base + suffix if it fits in 63 characters, else a cut base, a hash, and the suffix.

    The suffix (e.g. "-startup") is kept whole because it is what a person reads in `kubectl get jobs`.
    """
    whole = base + suffix
    if len(whole) <= MAX_NAME:
        return whole
    room = MAX_NAME - len(suffix) - _HASH_LEN - 1
    cut = _EDGE.sub("", base[:room])
    return f"{cut}-{_digest(whole)}{suffix}"


def label_value(name: str) -> str:
    """A label value for an object name: the name itself when it fits, else a cut name and a hash.

    Anything that selects by these labels must build the value with this same function, and confirm
    the object with `names_slot` (a cut value is not unique).
    """
    return bounded(name)


def names_slot(obj: Mapping[str, Any], slot_name: str) -> bool:
    """The Job (or Pod) `obj` belongs to slot `slot_name`: its LABEL_SLOT is the slot's label value and its
    ANNOTATION_SLOT_NAME is the slot's full name. A Job made before that annotation existed (none on it) is
    taken by its label only when the label is the whole slot name (one not cut), never by a cut value."""
    meta = obj.get("metadata") or {}
    label = (meta.get("labels") or {}).get(names.LABEL_SLOT)
    if not slot_name or label != label_value(slot_name):
        return False
    full = (meta.get("annotations") or {}).get(names.ANNOTATION_SLOT_NAME)
    return full == slot_name if full is not None else label == slot_name


def startup_job_name(claim_name: str) -> str:
    """`<claim>-startup`: one claim is one attempt, so it has at most one startup Job."""
    return bounded(claim_name, "-startup")


def _numbered(owner_name: str, word: str, number: int, episode: str | None) -> str:
    if number < 1:
        raise ValueError(f"shutdown Job number must be >= 1, got {number}")
    suffix = f"-{word}-{number}"
    if episode:
        suffix = f"-{_digest(episode)}{suffix}"
    return bounded(owner_name, suffix)


def shutdown_job_name(owner_name: str, number: int, episode: str | None = None, *, slot_owned: bool = False) -> str:
    """`<claim>-shutdown-<n>` for a claim's shutdown; `<slot>-unwanted-<n>` for the slot's own (`slot_owned`:
    an unwanted machine, no claim asked). The two never meet: a claim may be named like its slot.

    `number` is the shutdown attempt this Job is (status.shutdownAttempts + 1). A slot outlives its
    episodes, so a slot-owned shutdown may pass `episode` (any text that identifies the episode, such
    as the time the machine was first seen unwanted): it is hashed into the name, so the Job of an
    earlier episode that is still kept by its TTL is never mistaken for this one.
    """
    return _numbered(owner_name, "unwanted" if slot_owned else "shutdown", number, episode)
