"""Read RPC answers, memoized against the cache and the in-flight writes.

Why: NodeGroupNodes over a 1,000-slot group walks every slot and its claims; CA calls it (and
TargetSize, ForNode) many times per loop. Answers are computed once per change -- the key is
(cache.version, scaler.version) -- and a NodeGroupNodes answer that contains a recent creation
failure also expires by the clock when that failure leaves its boot window. Everything is read
under the cache lock, so an answer is always one consistent snapshot.
"""
from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from homecluster.model.objects import dig, name_of
from homecluster.provider.actions import ProviderSettings, Scaler
from homecluster.kube.cache import GROUPS, Cache
from homecluster.provider.logic import (GroupInfo, group_instances, group_of_node, reported_group, require_group,
                                        target_size)
from homecluster.provider.proto import externalgrpc_pb2 as pb
from homecluster.provider.template import template_bytes

_MAX_FOR_NODE_ENTRIES = 20_000


def _node_group_message(info: GroupInfo) -> pb.NodeGroup:
    return pb.NodeGroup(id=info.id, minSize=info.min_size, maxSize=info.max_size, debug=info.debug)


class Views:
    """Memoized answers of the read RPCs. Thread-safe (everything happens under cache.lock)."""

    def __init__(self, cache: Cache, scaler: Scaler, settings: ProviderSettings,
                 clock: Callable[[], datetime]) -> None:
        self.cache = cache
        self.scaler = scaler
        self.settings = settings
        self.clock = clock
        self._key: tuple[int, int] | None = None
        self._memo: dict[Any, Any] = {}

    def _fresh(self) -> dict[Any, Any]:
        """The memo for the current state; dropped whenever the cache or the reservations change."""
        key = (self.cache.version, self.scaler.version)
        if key != self._key:
            self._memo = {}
            self._key = key
        return self._memo

    def _memoized(self, key: Any, compute: Callable[[], Any]) -> Any:
        with self.cache.lock:
            memo = self._fresh()
            if key not in memo:
                memo[key] = compute()
            return memo[key]

    def _reported(self, group: dict[str, Any]) -> GroupInfo:
        return reported_group(self.cache, group, self.scaler.inflight(), self.settings.model)

    def node_groups(self) -> pb.NodeGroupsResponse:
        def compute() -> pb.NodeGroupsResponse:
            groups = [self.cache.get(GROUPS, n) for n in self.cache.group_names()]
            return pb.NodeGroupsResponse(
                nodeGroups=[_node_group_message(self._reported(g)) for g in groups])
        return self._memoized("groups", compute)

    def node_group(self, group_id: str) -> pb.NodeGroup:
        return self._memoized(("group", group_id),
                              lambda: _node_group_message(self._reported(require_group(self.cache, group_id))))

    def for_node(self, provider_id: str, name: str) -> pb.NodeGroupForNodeResponse:
        def compute() -> pb.NodeGroupForNodeResponse:
            group = group_of_node(self.cache, provider_id, name)
            if group is None:
                return pb.NodeGroupForNodeResponse(nodeGroup=pb.NodeGroup(id=""))
            return pb.NodeGroupForNodeResponse(nodeGroup=self.node_group(name_of(group)))
        with self.cache.lock:
            memo = self._fresh()
            if len(memo) > _MAX_FOR_NODE_ENTRIES:
                memo.clear()
            return self._memoized(("for-node", provider_id, name), compute)

    def target_size(self, group_id: str) -> int:
        def compute() -> int:
            require_group(self.cache, group_id)
            return target_size(self.cache, group_id, self.scaler.inflight())
        return self._memoized(("target", group_id), compute)

    def nodes(self, group_id: str) -> pb.NodeGroupNodesResponse:
        now = self.clock()
        with self.cache.lock:
            memo = self._fresh()
            cached = memo.get(("nodes", group_id))
            if cached is not None and (cached[1] is None or now < cached[1]):
                return cached[0]
            group = require_group(self.cache, group_id)
            instances, expires = group_instances(self.cache, group, self.scaler.inflight(), now, self.settings.model)
            response = pb.NodeGroupNodesResponse(instances=[
                pb.Instance(id=i.id, status=pb.InstanceStatus(
                    instanceState=i.state,
                    errorInfo=pb.InstanceErrorInfo(errorCode=i.error_code, errorMessage=i.error_message,
                                                   instanceErrorClass=i.error_class) if i.error_code else None))
                for i in instances])
            memo[("nodes", group_id)] = (response, expires)
            return response

    def template(self, group_id: str) -> pb.NodeGroupTemplateNodeInfoResponse:
        def compute() -> pb.NodeGroupTemplateNodeInfoResponse:
            data = template_bytes(require_group(self.cache, group_id))
            return pb.NodeGroupTemplateNodeInfoResponse(nodeInfo=data, nodeBytes=data)
        return self._memoized(("template", group_id), compute)

    def gpu_label(self) -> str:
        def compute() -> str:
            for name in self.cache.group_names():
                label = dig(self.cache.get(GROUPS, name), "spec", "gpu", "label", default="")
                if label:
                    return label
            return ""
        return self._memoized("gpu-label", compute)

    def gpu_types(self) -> list[str]:
        def compute() -> list[str]:
            types: set[str] = set()
            for name in self.cache.group_names():
                types.update(str(t) for t in dig(self.cache.get(GROUPS, name), "spec", "gpu", "types", default=[]) or [])
            return sorted(types)
        return self._memoized("gpu-types", compute)
