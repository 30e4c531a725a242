"""Fault injection: make the next writes of a resource fail, break or slow watch streams, and make admission
webhooks unreachable.

Tests use it to prove the operator survives what a real cluster does to it: conflicts, 500s, timeouts, watch
streams that end or lag, and a webhook that is down while its server keeps running.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Iterable

DEFAULT_VERBS = ("create", "update", "patch", "delete")
WEBHOOK_MODES = ("refused", "timeout")


@dataclass
class _Rule:
    resource: str  # plural, optionally "plural/subresource"
    group: str | None
    remaining: int
    code: int | str
    verbs: frozenset[str]
    agent: str | None = None  # only requests whose User-Agent contains this


@dataclass
class Faults:
    timeout_delay: float = 1.0  # how long a "timeout" fault hangs before answering 504
    retry_after: int = 1  # the Retry-After (seconds) of a 429 fault
    watch_delay: float = 0.0
    _rules: list[_Rule] = field(default_factory=list)
    _drops: dict[str, int] = field(default_factory=dict)  # plural -> generation; watchers compare
    _stalls: dict[str, int] = field(default_factory=dict)  # plural -> generation, as _drops
    _webhooks_down: dict[str, str] = field(default_factory=dict)  # webhook name ("*": every one) -> mode
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def fail_next(self, resource: str, count: int = 1, code: int | str = 500,
                  verbs: Iterable[str] = DEFAULT_VERBS, agent: str | None = None) -> None:
        """Fail the next `count` requests with these verbs on `resource` ("pods", "nodes.infra.homecluster.dev",
        "pods/status"). code is 409 (Conflict), 500 (InternalError), 429 (TooManyRequests, with a Retry-After
        header of `retry_after` seconds), any other HTTP code, "timeout" (hang for `timeout_delay` seconds,
        then 504) or "disconnect" (close the connection without an answer: aiohttp's client raises
        ServerDisconnectedError, a ClientError that is no OSError). With `agent`, only requests whose User-Agent
        contains it fail (e.g. the operator's, not the lab's own kubelet's). The store is not changed by a
        failed request."""
        if code not in (409, 500, "timeout", "disconnect") and not isinstance(code, int):
            raise ValueError(f"code must be an HTTP status, 'timeout' or 'disconnect', not {code!r}")
        plural, _, group = resource.partition(".")
        with self._lock:
            self._rules.append(_Rule(plural, group if group else None, count, code, frozenset(verbs), agent))

    def take(self, plural: str, group: str, subresource: str, verb: str, user_agent: str = "") -> int | str | None:
        """Consume and return the fault for this request, if any."""
        names = {plural, f"{plural}/{subresource}"} if subresource else {plural}
        with self._lock:
            for rule in self._rules:
                if rule.remaining > 0 and rule.resource in names and verb in rule.verbs \
                        and (rule.group is None or rule.group == group) \
                        and (rule.agent is None or rule.agent in user_agent):
                    rule.remaining -= 1
                    if rule.remaining == 0:
                        self._rules.remove(rule)
                    return rule.code
        return None

    def clear(self) -> None:
        with self._lock:
            self._rules.clear()
            self._webhooks_down.clear()
        self.watch_delay = 0.0

    def drop_watches(self, resource: str | None = None) -> None:
        """End every open watch stream of `resource` (a plural; None: all), as an apiserver restart would."""
        with self._lock:
            key = resource or "*"
            self._drops[key] = self._drops.get(key, 0) + 1

    def drop_generation(self, plural: str) -> int:
        with self._lock:
            return self._drops.get(plural, 0) + self._drops.get("*", 0)

    def stall_watches(self, resource: str | None = None) -> None:
        """Make every watch stream of `resource` (a plural; None: all) open now go silent and never end:
        no events, no bookmarks, no end at timeoutSeconds, the connection left open -- a half-open stream,
        as when the API server or a proxy vanished without closing it. Streams opened later are healthy,
        so a client that gives up on a silent stream and reconnects gets its events again."""
        with self._lock:
            key = resource or "*"
            self._stalls[key] = self._stalls.get(key, 0) + 1

    def stall_generation(self, plural: str) -> int:
        with self._lock:
            return self._stalls.get(plural, 0) + self._stalls.get("*", 0)

    def delay_watches(self, seconds: float) -> None:
        """Deliver every watch event `seconds` late (0 restores)."""
        self.watch_delay = seconds

    def webhook_down(self, name: str | None = None, mode: str = "refused") -> None:
        """Make the server's calls to the admission webhook `name` (None: every webhook) fail until
        `webhook_up`, as when its server is unreachable while it keeps running: "refused" fails at once
        (connect: connection refused), "timeout" waits the webhook's timeoutSeconds first (the network drops
        the packets). The webhook's failurePolicy then decides, as on a real API server: Fail refuses the
        request with a 500, Ignore lets it through."""
        if mode not in WEBHOOK_MODES:
            raise ValueError(f"webhook fault mode must be one of {', '.join(WEBHOOK_MODES)}, not {mode!r}")
        with self._lock:
            self._webhooks_down[name or "*"] = mode

    def webhook_up(self, name: str | None = None) -> None:
        """Undo `webhook_down(name)` (None: every webhook reachable again)."""
        with self._lock:
            if name is None:
                self._webhooks_down.clear()
            else:
                self._webhooks_down.pop(name, None)

    def webhook_fault(self, name: str) -> str | None:
        """How a call to webhook `name` fails now ("refused", "timeout"), or None when it is reachable."""
        with self._lock:
            return self._webhooks_down.get(name) or self._webhooks_down.get("*")
