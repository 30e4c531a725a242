"""In a pod the service-account token rotates: the operator's client re-reads it (at most once a minute)."""
from __future__ import annotations

from aiohttp import web
from support.http import serving

from homecluster.kube import client as kube
from homecluster.kube.connection import Connection, TokenFile


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_token_is_re_read_once_a_minute_and_the_last_good_one_is_kept(tmp_path):
    path = tmp_path / "token"
    path.write_text("first\n")
    clock = Clock()
    token = TokenFile(str(path), "first", every=60, clock=clock)
    path.write_text("second\n")
    assert token.current() == "first", "read at start: not again within the minute"
    clock.now += 60
    assert token.current() == "second"
    path.unlink()
    clock.now += 60
    assert token.current() == "second", "a file that cannot be read keeps the last good token"
    path.write_text("")
    clock.now += 60
    assert token.current() == "second", "nor does an empty one replace it"


def test_a_connection_without_a_token_file_keeps_its_token():
    c = Connection(server="https://x", token="fixed")
    assert c.current_token() == "fixed" and c.headers() == {"Authorization": "Bearer fixed"}
    assert "fixed" not in repr(c)


async def test_every_request_carries_the_token_as_it_is_now(tmp_path):
    seen: list[str] = []

    async def nodes(request: web.Request) -> web.Response:
        seen.append(request.headers.get("Authorization", ""))
        return web.json_response({"kind": "NodeList", "apiVersion": "v1", "metadata": {"resourceVersion": "1"},
                                  "items": []})

    path = tmp_path / "token"
    path.write_text("old-token")
    async with serving({"/api/v1/nodes": nodes}) as url:
        client = kube.KubeClient(Connection(server=url, token="old-token",
                                            token_file=TokenFile(str(path), "old-token", every=0)))
        try:
            await client.list(kube.NODES)
            path.write_text("rotated-token")
            await client.list(kube.NODES)
        finally:
            await client.close()
    assert seen == ["Bearer old-token", "Bearer rotated-token"]
