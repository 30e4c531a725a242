"""List-then-watch, forever: the informer loop every controller runs, reduced to what the executor needs.

Each pass lists (a resync: the handler learns what exists, and so what vanished while it was not
watching), then watches from the list's resourceVersion until the stream ends or expires.
"""
from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from homecluster_lab.node.kube import Kube, KubeError

log = logging.getLogger("homecluster_lab.executor")


async def list_and_watch(kube: Kube, path: str, on_resync: Callable[[list[dict[str, Any]], float], None],
                         on_event: Callable[[str, dict[str, Any]], None], *, retry: float = 1.0,
                         synced: asyncio.Event | None = None, query: dict[str, str] | None = None) -> None:
    """on_resync(items, listed_at) gets every list (listed_at: time.monotonic() before the request);
    `query` (a fieldSelector, say) is sent with the list and with the watch."""
    while True:
        try:
            listed_at = time.monotonic()
            listing = await kube.get(path, query)
            rv = (listing.get("metadata") or {}).get("resourceVersion") or "0"
            on_resync(listing.get("items") or [], listed_at)
            if synced is not None:
                synced.set()
            async for event in kube.watch(path, rv, query=query):
                etype, obj = event.get("type"), event.get("object") or {}
                if etype == "ERROR":
                    log.debug("watch %s: %s; listing again", path, obj.get("message"))
                    break
                if etype == "BOOKMARK":
                    continue
                on_event(etype, obj)
        except asyncio.CancelledError:
            raise
        except (KubeError, OSError, ValueError, asyncio.TimeoutError) as exc:
            log.warning("watch %s: %s; retrying in %.1fs", path, exc, retry)
            await asyncio.sleep(retry)
        except Exception as exc:  # the transport's own errors (aiohttp ClientError and friends)
            log.warning("watch %s: %s: %s; retrying in %.1fs", path, type(exc).__name__, exc, retry)
            await asyncio.sleep(retry)
