"""A list answered 2xx with a body that is no JSON object (a proxy's page, a cut answer) is a ValueError naming
the list, one of kube.READ_FAILURES, so the sweep and a conflict's re-read say it and go on (it used to be an
AttributeError from deep in the client: a "bug" with a traceback in the pass that met it)."""
from __future__ import annotations

import pytest
from aiohttp import web
from support.http import serving

from homecluster.kube import client as kube
from homecluster.kube.connection import Connection


@pytest.mark.parametrize("body, content_type", [("<html>gateway</html>", "text/html"), ('["a list"]', "application/json")])
async def test_a_list_whose_body_is_no_json_object_is_a_read_failure_naming_the_list(body, content_type):
    async def nodes(request: web.Request) -> web.Response:
        return web.Response(text=body, content_type=content_type)

    async with serving({"/api/v1/nodes": nodes}) as url:
        client = kube.KubeClient(Connection(server=url, token="t"))
        try:
            with pytest.raises(kube.READ_FAILURES) as caught:
                await client.list(kube.NODES)
        finally:
            await client.close()
    assert isinstance(caught.value, ValueError), caught.value
    assert str(caught.value) == "list nodes: the answer is no JSON object"
