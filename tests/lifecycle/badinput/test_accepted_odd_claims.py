"""What the API server accepts, the operator survives and names (issue 14, "Bad input"): kube-apiserver stores
an array in a `format: date-time` field (kube-openapi skips the type check of a formatted string given an
array; tests/k8s/test_k8s_admission_agreement.py shows it, and the lab API server does the same), so a
claim can arrive with spec.deadlineAt: []. The slot's pass cannot read it: the controller says which object,
which field and the fix, without a traceback, backs the slot off and keeps its worker.
"""
from __future__ import annotations

import logging

import pytest

CLAIMS = "nodeclaims.infra.homecluster.dev"


async def test_a_claim_with_an_array_in_requested_at_is_read_as_before(env):
    await env.group()
    await env.slot()
    await env.claim()
    stored = await env.lab.patch(CLAIMS, "c1", {"spec": {"requestedAt": [1]}})
    assert stored["spec"]["requestedAt"] == [1]  # the API server kept it, as kube-apiserver does
    assert await env.step(times=5) is not None   # the pass does not read requestedAt once deadlineAt is set


@pytest.mark.parametrize("deadline", [[], [{"a": 1}], ["2026-03-04T09:38:15Z"]])
async def test_a_claim_with_an_array_in_deadline_at_is_named_with_the_fix(env, caplog, deadline):
    await env.group()
    await env.slot()
    await env.claim()
    await env.lab.patch(CLAIMS, "c1", {"spec": {"deadlineAt": deadline}})
    with caplog.at_level(logging.WARNING, logger="homecluster.controller"):
        for _ in range(4):  # the first passes admit the claim; the launch step reads deadlineAt
            await env.refill()
            await env.controller.process("worker-01")  # returns: the worker goes on
    records = [r for r in caplog.records if "worker-01" in r.getMessage()]
    assert records and env.controller._failures.get("worker-01"), "the pass read the claim without complaint"
    for record in records:
        assert record.levelno == logging.WARNING and record.exc_info is None, record.getMessage()
        text = record.getMessage()
        assert "spec.deadlineAt of c1" in text and "RFC 3339" in text and "correct that field" in text, text
