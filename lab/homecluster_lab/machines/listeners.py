"""Callbacks woken after a machine changes: what the kubelet and the SSH gate subscribe to.

Shared by the simulated machine (machine.py) and the VM-backed one (lab/vm/node_watch.py). Safe to use
from any thread; listeners are called outside the lock, so one may unsubscribe while being called.
"""
from __future__ import annotations

import threading
from collections.abc import Callable

Listener = Callable[[], None]


class Listeners:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: list[Listener] = []

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call `listener()` on every `notify`; returns the function that unsubscribes (idempotent)."""
        with self._lock:
            self._items.append(listener)

        def unsubscribe() -> None:
            with self._lock:
                if listener in self._items:
                    self._items.remove(listener)
        return unsubscribe

    def notify(self) -> None:
        with self._lock:
            listeners = list(self._items)
        for listener in listeners:
            listener()
