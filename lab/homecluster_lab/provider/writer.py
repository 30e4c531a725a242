"""The provider's claim writes when the lab runs it without the operator: the operator's own ClaimWriter.

operator/providerglue.ClaimWriter over the product's KubeClient: the same error mapping (409 -> ABORTED, 5xx ->
UNAVAILABLE, else FAILED_PRECONDITION) and the same resourceVersion precondition on deletes as in `homecluster
run`. The operator ingests each write into its store and runs a pass; here no controller runs and the cache
learns of the write from its watch (watch.py), as it always has in the lab.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from homecluster.kube.client import KubeClient
from homecluster.operator.providerglue import ClaimWriter


def _learned_from_the_watch(kind: str, obj: Mapping[str, Any]) -> None:
    """No store and no pass to run: watch.py brings the write into the cache."""


def claim_writer(client: KubeClient) -> ClaimWriter:
    return ClaimWriter(client, _learned_from_the_watch)
