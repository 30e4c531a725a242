"""Deterministic names for lifecycle Jobs, and label values that always fit.

A Job's name is a pure function of its owner and its step, so a create retried after a crash
meets its own earlier Job (409 AlreadyExists) instead of starting a second power action. Job names
and label values are limited to 63 characters; a longer base is cut and suffixed with a short hash
of the full text, so two long names that share a prefix still get different results.
"""
from __future__ import annotations

import hashlib
import re

MAX_NAME = 63
_HASH_LEN = 6
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

    Anything that selects by these labels must build the value with this same function.
    """
    return bounded(name)


def startup_job_name(claim_name: str) -> str:
    """`<claim>-startup`: one claim is one attempt, so it has at most one startup Job."""
    return bounded(claim_name, "-startup")


def shutdown_job_name(owner_name: str, number: int, episode: str | None = None) -> str:
    """`<owner>-shutdown-<n>`, where the owner is the claim, or the slot for an unwanted machine.

    `number` is the shutdown attempt this Job is (status.shutdownAttempts + 1). A slot outlives its
    episodes, so a slot-owned shutdown may pass `episode` (any text that identifies the episode, such
    as the time the machine was first seen unwanted): it is hashed into the name, so the Job of an
    earlier episode that is still kept by its TTL is never mistaken for this one.
    """
    if number < 1:
        raise ValueError(f"shutdown Job number must be >= 1, got {number}")
    suffix = f"-shutdown-{number}"
    if episode:
        suffix = f"-{_digest(episode)}{suffix}"
    return bounded(owner_name, suffix)
