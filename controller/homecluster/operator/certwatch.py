"""Self-signed mode: hear at once when one of its objects changes, instead of at the next renewal or resync.

One watch per object, by name (fieldSelector metadata.name, which RBAC authorizes against the resourceNames of
config/components/self-signed-certs): the four certificate Secrets and the ValidatingWebhookConfiguration.
Any change to one of them -- deleted, edited, re-created by `kubectl apply` or a GitOps tool without our
caBundle -- pokes the certificate manager, which runs a pass (operator/certificates.py). Its own writes poke
it too: the pass that follows finds nothing to do, writes nothing, and so raises no event.

A watch that is refused (an older RBAC without list/watch on those names) is said once, naming the object
and the fix, and tried again every WATCH_RETRY_SECONDS: the passes at renewals and the resync still run.
A stream that ends (the server's timeout, a dropped connection) is opened again after RECONNECT_SECONDS; the
object as it is then arrives first, and pokes only if its resourceVersion is not the one last seen.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Any

import aiohttp

from homecluster.kube.client import ApiError, KubeClient, Resource
from homecluster.kube.watchstream import stream

log = logging.getLogger("homecluster.certificates")
WATCH_RETRY_SECONDS = 30.0
RECONNECT_SECONDS = 1.0


class Changes:
    """Which events of one object are changes: a deletion, or a resourceVersion other than the last seen."""

    def __init__(self) -> None:
        self.last: str | None = None

    def changed(self, obj: Mapping[str, Any], deleted: bool) -> bool:
        version = None if deleted else str((obj.get("metadata") or {}).get("resourceVersion", ""))[:64]
        seen, self.last = self.last, version
        return deleted or version != seen


async def watch_one(client: KubeClient, res: Resource, name: str, namespace: str | None,
                    poke: Callable[[], None]) -> None:
    """Forever: poke on every change of the object `name` (module docstring). Cancel to stop."""
    changes, said = Changes(), False
    what = f"{res.kind} {namespace + '/' if namespace else ''}{name}"

    def heard(obj: Mapping[str, Any], deleted: bool) -> None:
        if changes.changed(obj, deleted):
            log.debug("self-signed certificates: %s %s", what, "deleted" if deleted else "changed")
            poke()

    while True:
        try:
            await stream(client, res, namespace, "", heard, name=name)
            said = False
            await asyncio.sleep(RECONNECT_SECONDS)
        except asyncio.CancelledError:
            raise
        except ApiError as exc:
            if not said:
                fix = ("give the operator list and watch on it by name (config/components/self-signed-certs/"
                       "rbac.yaml)" if exc.status == 403 else "trying again")
                log.warning("self-signed certificates: cannot watch %s (%s %s): a change to it is noticed at the "
                            "next pass only; %s; next try in %.0fs", what, exc.status, exc.reason, fix,
                            WATCH_RETRY_SECONDS)
                said = True
            await asyncio.sleep(WATCH_RETRY_SECONDS)
        except (aiohttp.ClientError, asyncio.TimeoutError, ValueError, OSError) as exc:
            log.debug("self-signed certificates: watch of %s ended (%s); opening it again", what, exc)
            await asyncio.sleep(RECONNECT_SECONDS)
