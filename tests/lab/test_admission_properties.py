"""Bad input, tried in bulk, through admission (issue 14): Groups, slots (kind Node) and NodeClaims with one
field changed to a value the CRD schema accepts or refuses (crd_mutations), sent over HTTP to the lab API
server, which enforces our CRDs' schemas and CEL rules as kube-apiserver does.

Invariants: a valid object is created; an invalid one is refused (422) on create and on update, with a
message that names the field; a refused update leaves the stored object exactly as it was (same
resourceVersion, same body) and a refused create stores nothing.
"""
from __future__ import annotations

import copy
import itertools
from pathlib import Path

import aiohttp
import pytest
from crd_mutations import PLURAL_OF, Mutation, mutation, sample
from hypothesis import HealthCheck, example, given, settings

from homecluster import API_GROUP, API_VERSION
from homecluster_lab.apiserver.server import BackgroundLabAPIServer

pytestmark = pytest.mark.lab

CRD_DIR = Path(__file__).resolve().parents[2] / "config" / "crd"
KINDS = ("Group", "Node", "NodeClaim")
EXAMPLES = 80  # per kind
PROPERTY = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
_names = itertools.count(1)


class Lab:
    """The lab API server on its own thread, reached over HTTP like any client."""

    def __init__(self, tmp: Path) -> None:
        self.bg = BackgroundLabAPIServer(crd_dir=CRD_DIR, workdir=tmp / "lab-api")
        self.api = self.bg.start()
        for kind in KINDS:
            code, body = self.request("POST", kind, "", sample(kind))
            assert code == 201, body

    def path(self, kind: str, name: str) -> str:
        return f"/apis/{API_GROUP}/{API_VERSION}/{PLURAL_OF[kind]}" + (f"/{name}" if name else "")

    def request(self, method: str, kind: str, name: str, body: dict | None = None) -> tuple[int, dict]:
        async def go() -> tuple[int, dict]:
            async with aiohttp.ClientSession(self.api.url) as session:
                async with session.request(method, self.path(kind, name), json=body) as resp:
                    return resp.status, await resp.json()
        return self.bg.call(go())

    def stored(self, kind: str, name: str) -> dict | None:
        return self.bg.call(_copy(self.api.get(f"{PLURAL_OF[kind]}.{API_GROUP}", name)))


async def _copy(obj):
    return copy.deepcopy(obj)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    started = Lab(tmp_path_factory.mktemp("admission-properties"))
    yield started
    started.bg.stop()


def check(lab: Lab, m: Mutation) -> None:
    name = f"{m.obj['metadata']['name']}-p{next(_names)}"
    obj = {**m.obj, "metadata": {**m.obj["metadata"], "name": name}}
    code, body = lab.request("POST", m.kind, "", obj)
    if m.valid:
        assert code == 201, f"{m.kind} with {m.field} = {_at(m)!r} ({m.how}) was refused: {body.get('message')}"
        return
    assert code == 422, f"{m.kind} with {m.field} {m.how} was answered {code}: {body}"
    assert m.field in body["message"], f"refusal does not name {m.field}: {body['message']}"
    assert lab.stored(m.kind, name) is None
    # the same change as an update of the stored object: refused, and the stored object is untouched
    base = sample(m.kind)["metadata"]["name"]
    before = lab.stored(m.kind, base)
    update = {**m.obj, "metadata": {**m.obj["metadata"], "resourceVersion": before["metadata"]["resourceVersion"]}}
    code, body = lab.request("PUT", m.kind, base, update)
    assert code == 422, f"update of {m.kind} {base} with {m.field} {m.how} was answered {code}: {body}"
    assert m.field in body["message"], f"refusal does not name {m.field}: {body['message']}"
    assert lab.stored(m.kind, base) == before


def _at(m: Mutation):
    value = m.obj
    for part in m.field.replace("[", ".").replace("]", "").split("."):
        value = value[int(part)] if part.isdigit() else value.get(part)
    return value


@PROPERTY
@given(m=mutation("Group"))
def test_random_groups_through_admission(lab, m):
    check(lab, m)


@PROPERTY
@given(m=mutation("Node"))
def test_random_slots_through_admission(lab, m):
    check(lab, m)


@PROPERTY
@given(m=mutation("NodeClaim"))
def test_random_nodeclaims_through_admission(lab, m):
    check(lab, m)
