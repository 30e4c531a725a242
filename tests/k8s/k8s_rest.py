"""A tiny REST client for the tests that send the same request to the real API server and to the lab's
in-memory one and compare the answers: (HTTP status, JSON body), nothing interpreted."""
from __future__ import annotations

import asyncio
import json
import ssl
from typing import Any

import aiohttp


class Rest:
    def __init__(self, url: str, *, ssl_context: ssl.SSLContext | None = None, token: str | None = None):
        self.url = url.rstrip("/")
        self._ssl = ssl_context
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._session: aiohttp.ClientSession | None = None

    async def request(self, method: str, path: str, body: Any = None,
                      content_type: str = "application/json") -> tuple[int, dict[str, Any]]:
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60))
        headers = {**self._headers, "Content-Type": content_type, "Accept": "application/json"}
        async with self._session.request(method, self.url + path, json=body, headers=headers,
                                         ssl=self._ssl if self._ssl is not None else None) as answer:
            data = await answer.json(content_type=None) if await answer.read() else {}
            return answer.status, data

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


def causes(status: dict[str, Any]) -> list[tuple[str, str, str]]:
    """A Status's causes as sorted (reason, field, message) triples."""
    return sorted((c.get("reason", ""), c.get("field", ""), c.get("message", ""))
                  for c in (status.get("details") or {}).get("causes") or [])


async def watch_events(rest: Rest, path: str, *, stop_after: float) -> list[dict[str, Any]]:
    """Every event of a watch on `path` (which should carry `watch=1` and `timeoutSeconds`) until the server
    ends it or `stop_after` seconds pass: the decoded JSON lines."""
    events: list[dict[str, Any]] = []
    session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=stop_after))
    try:
        async with session.get(rest.url + path, headers=rest._headers, ssl=rest._ssl) as answer:
            assert answer.status == 200, await answer.text()
            async for line in answer.content:
                if line.strip():
                    events.append(json.loads(line))
    except asyncio.TimeoutError:
        pass
    finally:
        await session.close()
    return events
