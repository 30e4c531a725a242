"""A Timeline's watch lasts as long as its test (integration_pool.WATCH_TIMEOUT).

aiohttp's default session timeout (5 minutes in all) ended the claims Timeline of test_attempts silently at 300 s
when the machine's load stretched the test to 452 s: the claims' last statuses were never recorded. Here the
default is shrunk to 1 s, and the watch must still record an event sent after it.
"""
from __future__ import annotations

import asyncio
import json

import aiohttp
import pytest
from aiohttp import web
from integration_pool import Timeline
from support.http import serving
from support.waits import until


@pytest.fixture
async def slow_watch():
    """A server whose watch sends one claim's status now and the next 1.5 s later."""
    async def watch(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse()
        await resp.prepare(request)
        for attempt in (1, 2):
            obj = {"metadata": {"name": "c1"}, "status": {"phase": "booting", "attempt": attempt}}
            await resp.write((json.dumps({"type": "MODIFIED", "object": obj}) + "\n").encode())
            await asyncio.sleep(1.5)
        return resp
    async with serving({"/claims": watch}) as url:
        yield url


async def test_a_timeline_outlives_aiohttps_default_session_timeout(slow_watch, monkeypatch):
    monkeypatch.setattr(aiohttp.client, "DEFAULT_TIMEOUT", aiohttp.ClientTimeout(total=1.0))
    timeline = await Timeline(slow_watch, "/claims").start()
    try:
        await until(lambda: len(timeline.statuses("c1")) == 2, lambda: f"c1's second status ({timeline.statuses('c1')})",
                    5)
    finally:
        await timeline.stop()
    assert [s["attempt"] for s in timeline.statuses("c1")] == [1, 2]
