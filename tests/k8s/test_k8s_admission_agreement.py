"""The admission property suite's objects (tests/lab/crd_mutations.py) sent to kube-apiserver and to the lab's
in-memory API server: both must agree on accept or refuse, and on the status and message of a refusal.

A fixed sample: hypothesis draws the mutations deterministically (derandomize) into a list first, then each
is created on both servers under the same name. tests/lab/test_admission_properties.py tries many more
against the in-memory server alone; this says the in-memory server's verdicts are the real one's.
"""
from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from k8s_rest import Rest

from crd_mutations import PLURAL_OF, Mutation, mutation


pytestmark = pytest.mark.asyncio(loop_scope="module")
PER_KIND = 25
API = "/apis/infra.homecluster.dev/v2alpha1"
# (field, how) -> why the refusal's wording differs; status and verdict still agree (docs/lab.md)
KNOWN_WORDING: dict[tuple[str, str], str] = {}


def drawn(kind: str) -> list[Mutation]:
    out: list[Mutation] = []

    @settings(max_examples=PER_KIND, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(m=mutation(kind))
    def collect(m: Mutation) -> None:
        out.append(m)

    collect()
    return out


@pytest.mark.parametrize("kind", ["Group", "Node", "NodeClaim"])
async def test_both_servers_agree_on_random_objects(servers: dict[str, Rest], kind: str) -> None:
    names = itertools.count(1)
    disagreements = []
    mutations = drawn(kind)
    for m in mutations:
        name = f"agree-{kind.lower()}-{next(names)}"
        obj = {**m.obj, "metadata": {"name": name}}
        answers = {}
        for server, rest in servers.items():
            status, body = await rest.request("POST", f"{API}/{PLURAL_OF[kind]}", obj)
            answers[server] = (status, body.get("message") if status >= 400 else None)
        assert answers["real"][0] == answers["lab"][0], (m.field, m.how, answers)  # the same verdict
        if answers["real"] != answers["lab"] and (m.field, m.how) not in KNOWN_WORDING:
            disagreements.append((m.field, m.how, answers))
        if not m.valid:
            assert answers["real"][0] == 422 and m.field in answers["real"][1], (m.field, m.how, answers["real"])
    assert len(mutations) == PER_KIND
    assert not disagreements, "\n".join(map(str, disagreements))


async def test_both_servers_store_an_array_in_a_date_time_field(servers: dict[str, Rest]) -> None:
    """kube-openapi skips the type check of a string with a format when it is given an array, so
    kube-apiserver stores spec.requestedAt: [1]; the in-memory server does the same, so the lab shows what
    the operator and the provider must survive (docs/reliability.md, "Bad input")."""
    for server, rest in servers.items():
        claim = {"apiVersion": "infra.homecluster.dev/v2alpha1", "kind": "NodeClaim",
                 "metadata": {"name": "array-in-requested-at"},
                 "spec": {"slotRef": "worker-01", "requestedAt": [1], "deadlineAt": []}}
        status, body = await rest.request("POST", f"{API}/nodeclaims", claim)
        assert status == 201, (server, body)
        assert body["spec"]["requestedAt"] == [1], (server, body)
