"""kopf wiring: kopf is only the watcher (the admission webhooks are served by operator/webhookserver.py).

Only @kopf.on.event handlers (plus startup, cleanup, login and probe) are registered: no
on.create/update/delete/resume, so kopf writes no progress or diff-base annotations and adds no
finalizer of its own -- every write to a claim is one our Recorder means to make. kopf's own
persistence finalizer is set to a name that is never used (`infra.homecluster.dev/kopf`), kopf's peering is off
(it needs CRDs of its own and only pauses by priority; one acting replica is our Lease's job,
operator/leader.py), and kopf posts k8s Events only for errors.

With an elector every replica fills and follows the cache and serves the webhook; only the Lease's
holder starts the slot workers and the provider (`act`). A leader that loses the Lease stops acting at
once and asks the process to stop (`Hooks.on_lost`), before another replica may take the Lease.

Handlers are async so they run on the operator's loop next to the workers (a sync kopf handler
would run in a thread pool, and the work queue is an asyncio structure).
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

import kopf

from homecluster import API_GROUP, API_VERSION, names
from homecluster.kube.connection import Connection
from homecluster.operator.controller import Controller
from homecluster.kube.store import JOBS
from homecluster.kube.cache import CLAIMS, GROUPS, NODES, SLOTS
from homecluster.operator.webhookserver import WebhookServer

KOPF_FINALIZER = f"{API_GROUP}/kopf"
LOGIN_LIFETIME = timedelta(minutes=10)


@dataclass(frozen=True)
class WatchTimeouts:
    """kopf's watch-stream timeouts (seconds), so that a dead stream is replaced rather than trusted.

    server: asked of the API server (timeoutSeconds): it ends a healthy stream, and kopf opens the
    next one. client: the most one stream may last on our side whatever the server does; a half-open
    stream (the server or a proxy gone without a FIN) never ends by itself and would freeze the
    cache, so that every conditional patch conflicts forever. It must exceed `server`. connect: the
    most a new stream may take to connect. kopf 1.45 also reconnects a stream silent for 70 s
    (settings.watching.inactivity_timeout); `client` bounds a stream that trickles but lags.
    """

    server: int = 300  # whole seconds: kube-apiserver answers 400 to timeoutSeconds=300.0
    client: float = 330.0
    connect: float = 10.0

    def __post_init__(self) -> None:
        if min(self.server, self.client, self.connect) <= 0 or self.client <= self.server:
            raise ValueError(f"watch timeouts must be positive with client ({self.client:g}s) > server "
                             f"({self.server:g}s): the server's end of a healthy stream must come first")


@dataclass
class Hooks:
    """What the startup/cleanup handlers do besides filling the cache (the provider, for one)."""

    connection: Connection
    webhook_server: WebhookServer | None = None  # our admission webhooks (operator/webhookserver.py), or None
    after_sync: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    on_cleanup: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    watch: WatchTimeouts = field(default_factory=WatchTimeouts)
    elector: Any | None = None  # an operator.leader.LeaderElector, or None: act at once (one replica)
    on_lost: Callable[[], None] = lambda: None  # the Lease could not be renewed: stop the process
    tasks: list[asyncio.Task] = field(default_factory=list)


def _deleted(event: dict) -> bool:
    return (event or {}).get("type") == "DELETED"


def register(registry: kopf.OperatorRegistry, controller: Controller, hooks: Hooks) -> None:
    store = controller.ctx.store
    log = controller.ctx.log

    @kopf.on.login(registry=registry)
    def login(**_: Any) -> kopf.ConnectionInfo:
        c = hooks.connection
        token = c.current_token()
        # a rotating in-cluster token: kopf logs in again when this expires (and on any 401), taking the new one
        expiration = datetime.now(timezone.utc) + LOGIN_LIFETIME if c.token_file is not None else None
        return kopf.ConnectionInfo(server=c.server, ca_path=c.ca_path, insecure=c.insecure, expiration=expiration,
                                   scheme="Bearer" if token else None, token=token,
                                   ca_data=None if c.ca_path else c.ca_data,
                                   certificate_path=c.cert_path, private_key_path=c.key_path,
                                   certificate_data=None if c.cert_path else c.cert_data,
                                   private_key_data=None if c.key_path else c.key_data,
                                   default_namespace=controller.ctx.namespace)

    @kopf.on.startup(registry=registry)
    async def startup(settings: kopf.OperatorSettings, **_: Any) -> None:
        settings.persistence.finalizer = KOPF_FINALIZER
        settings.peering.standalone = True
        settings.posting.level = logging.ERROR
        settings.watching.server_timeout = hooks.watch.server
        settings.watching.client_timeout = hooks.watch.client
        settings.watching.connect_timeout = hooks.watch.connect
        settings.networking.error_backoffs = [0.5, 1, 2, 5]
        await controller.fill()
        if hooks.webhook_server is not None:  # every replica answers admission once its cache (the checks read it) is filled
            try:
                await hooks.webhook_server.start()
            except OSError as exc:  # a retried startup would fill the cache and start again: stop instead
                raise kopf.PermanentError(f"the admission webhooks cannot listen on {hooks.webhook_server.host}:"
                                          f"{hooks.webhook_server.port} ({exc}): free the port, or set "
                                          f"--webhook-address, or run with --no-webhook") from exc
        controller.start_sweeping()  # every replica: its cache answers admission (operator.sweep)
        if hooks.elector is None:
            await act()
        else:
            hooks.tasks.append(asyncio.create_task(lead(), name="homecluster-leader"))

    async def act() -> None:
        await controller.start()
        for hook in hooks.after_sync:
            await hook()
        log.info("controller started: %d workers, caches synced", controller.workers)

    async def stop_acting() -> None:
        while hooks.on_cleanup:
            await hooks.on_cleanup.pop(0)()
        await controller.stop()

    async def lead() -> None:
        elector = hooks.elector
        try:
            await elector.campaign()
            await controller.sweep.once()  # a follower's cache may be a sweep behind: the first passes read it
            await act()
            await elector.hold()
        except Exception:  # never a replica that neither leads nor stops
            log.exception("leader election failed; stopping")
        await stop_acting()  # lost: no pass, no Job, no provider answer from here on
        hooks.on_lost()

    @kopf.on.cleanup(registry=registry)
    async def cleanup(**_: Any) -> None:
        for task in hooks.tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await stop_acting()
        if hooks.webhook_server is not None:
            await hooks.webhook_server.stop()
        if hooks.elector is not None:
            await hooks.elector.release()

    @kopf.on.probe(id="leader", registry=registry)
    def leader(**_: Any) -> bool:
        return hooks.elector is None or bool(hooks.elector.leading)

    @kopf.on.probe(id="caches-synced", registry=registry, errors=kopf.ErrorsMode.PERMANENT)
    def synced(**_: Any) -> bool:
        if not store.synced:
            raise kopf.PermanentError("the caches are not filled yet")
        return True

    @kopf.on.event(API_GROUP, API_VERSION, names.CLAIM_PLURAL, registry=registry)
    async def claim_event(event: dict, **_: Any) -> None:
        controller.ingest(CLAIMS, event["object"], deleted=_deleted(event))

    @kopf.on.event(API_GROUP, API_VERSION, names.SLOT_PLURAL, registry=registry)
    async def slot_event(event: dict, **_: Any) -> None:
        controller.ingest(SLOTS, event["object"], deleted=_deleted(event))

    @kopf.on.event(API_GROUP, API_VERSION, names.GROUP_PLURAL, registry=registry)
    async def group_event(event: dict, **_: Any) -> None:
        controller.ingest(GROUPS, event["object"], deleted=_deleted(event))

    @kopf.on.event("", "v1", "nodes", registry=registry)
    async def node_event(event: dict, **_: Any) -> None:
        controller.ingest(NODES, event["object"], deleted=_deleted(event))

    @kopf.on.event("batch", "v1", "jobs", labels={names.LABEL_MANAGED_BY: names.MANAGED_BY}, registry=registry)
    async def job_event(event: dict, **_: Any) -> None:
        controller.ingest(JOBS, event["object"], deleted=_deleted(event))
