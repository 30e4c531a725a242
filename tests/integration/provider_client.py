"""cluster-autoscaler's side of the externalgrpc protocol, for tests and benchmarks against `homecluster run`.

`ProviderClient` is the generated stub on a real gRPC channel over TCP (plaintext on loopback, as the lab
serves it) plus small helpers that return plain values, so a test reads like what the autoscaler asks.
`lab_config` builds the LabConfig the provider end-to-end tests use: the real operator as a subprocess,
simulated machines over real IPMI, short settings unless a test overrides some.

`operator_requests` reads the lab API server's request log (every request, reads included) and keeps those
made by the operator process: its own client (user agent `homecluster-operator`) and kopf's watcher
(user agent `kopf/<version>`).
"""
from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from integration_pool import lab_settings

from homecluster_lab.cluster import LabConfig
from homecluster.operator.leader import LEASE_NAME
from homecluster.provider.proto import externalgrpc_pb2 as pb
from homecluster.provider.proto import externalgrpc_pb2_grpc as pb_grpc

def _load_wire() -> Any:
    """tests/provider/provider_wire.py: the wire-format reader independent of our generated classes."""
    name = "provider_wire"
    if name not in sys.modules:
        path = Path(__file__).resolve().parents[1] / "provider" / "provider_wire.py"
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None, f"cannot load {path}"
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules[name] = module
    return sys.modules[name]


wire = _load_wire()
GROUP = "workers"
OPERATOR_AGENTS = ("homecluster-operator", "kopf/")
STATE_NAMES = {0: "unspecified", 1: "Running", 2: "Creating", 3: "Deleting"}


def lab_config(tmp_path: Path, slots: int = 2, **settings: str) -> LabConfig:
    """A lab with the operator serving the provider on an ephemeral port, short settings (their Job timeouts
    stretched to the machine's load) + overrides."""
    return LabConfig(slots=slots, driver="ipmi", boot_seconds=1.0, ready_taints_clear_seconds=0.5,
                     provider_address="127.0.0.1:0", workdir=tmp_path / "lab",
                     settings=lab_settings(**settings), require_operator=True)


@dataclass(frozen=True)
class Instance:
    """One NodeGroupNodes entry as the autoscaler's client reads it."""

    id: str
    state: str  # Running | Creating | Deleting | unspecified
    error_code: str = ""
    error_message: str = ""
    error_class: int = 0


def node(provider_id: str = "", name: str = "", labels: dict[str, str] | None = None,
         annotations: dict[str, str] | None = None) -> pb.ExternalGrpcNode:
    return pb.ExternalGrpcNode(providerID=provider_id, name=name, labels=labels or {}, annotations=annotations or {})


def placeholder(instance_id: str, reason: str = "unregistered") -> pb.ExternalGrpcNode:
    """The fake node the autoscaler builds for an instance with no Node: name = providerID = instance id."""
    return node(instance_id, instance_id, annotations={"k8s.io/cluster-autoscaler/fake-node-reason": reason})


def from_corev1(obj: dict[str, Any]) -> pb.ExternalGrpcNode:
    """What the autoscaler sends for a real corev1 Node: providerID, name, labels, annotations."""
    md = obj.get("metadata") or {}
    return node((obj.get("spec") or {}).get("providerID", ""), md.get("name", ""), md.get("labels") or {},
                md.get("annotations") or {})


def window(hours: float = 1.0) -> tuple[Any, Any]:
    """(startTimestamp, endTimestamp) of a pricing window `hours` long, ending now."""
    from google.protobuf.timestamp_pb2 import Timestamp
    end = datetime.now(timezone.utc)
    start_ts, end_ts = Timestamp(), Timestamp()
    start_ts.FromDatetime(end - timedelta(hours=hours))
    end_ts.FromDatetime(end)
    return start_ts, end_ts


class ProviderClient:
    """The generated CloudProvider stub and the health stub on one channel; close with `await close()`."""

    def __init__(self, address: str, timeout: float = 5.0) -> None:
        self.address = address
        self.timeout = timeout  # the autoscaler's default grpc_timeout
        self.channel = grpc.aio.insecure_channel(address)
        self.stub = pb_grpc.CloudProviderStub(self.channel)
        self.health = health_pb2_grpc.HealthStub(self.channel)

    async def __aenter__(self) -> "ProviderClient":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self.channel.close()

    async def health_status(self, service: str = "") -> str:
        answer = await self.health.Check(health_pb2.HealthCheckRequest(service=service), timeout=self.timeout)
        return health_pb2.HealthCheckResponse.ServingStatus.Name(answer.status)

    async def groups(self) -> list[pb.NodeGroup]:
        return list((await self.stub.NodeGroups(pb.NodeGroupsRequest(), timeout=self.timeout)).nodeGroups)

    async def group_for(self, n: pb.ExternalGrpcNode) -> str:
        """The group id for a node ("" when the provider does not manage it)."""
        answer = await self.stub.NodeGroupForNode(pb.NodeGroupForNodeRequest(node=n), timeout=self.timeout)
        return answer.nodeGroup.id

    async def target(self, group: str = GROUP) -> int:
        answer = await self.stub.NodeGroupTargetSize(pb.NodeGroupTargetSizeRequest(id=group), timeout=self.timeout)
        return answer.targetSize

    async def increase(self, delta: int, group: str = GROUP) -> None:
        await self.stub.NodeGroupIncreaseSize(pb.NodeGroupIncreaseSizeRequest(id=group, delta=delta),
                                              timeout=self.timeout)

    async def decrease(self, delta: int, group: str = GROUP) -> None:
        await self.stub.NodeGroupDecreaseTargetSize(pb.NodeGroupDecreaseTargetSizeRequest(id=group, delta=delta),
                                                    timeout=self.timeout)

    async def delete(self, nodes: list[pb.ExternalGrpcNode], group: str = GROUP) -> None:
        await self.stub.NodeGroupDeleteNodes(pb.NodeGroupDeleteNodesRequest(id=group, nodes=nodes),
                                             timeout=self.timeout)

    async def instances(self, group: str = GROUP) -> list[Instance]:
        answer = await self.stub.NodeGroupNodes(pb.NodeGroupNodesRequest(id=group), timeout=self.timeout)
        out = []
        for i in answer.instances:
            info = i.status.errorInfo
            out.append(Instance(i.id, STATE_NAMES.get(i.status.instanceState, str(i.status.instanceState)),
                                info.errorCode, info.errorMessage, info.instanceErrorClass))
        return out

    async def template(self, group: str = GROUP) -> pb.NodeGroupTemplateNodeInfoResponse:
        return await self.stub.NodeGroupTemplateNodeInfo(pb.NodeGroupTemplateNodeInfoRequest(id=group),
                                                          timeout=self.timeout)

    async def options(self, defaults: pb.NodeGroupAutoscalingOptions,
                      group: str = GROUP) -> pb.NodeGroupAutoscalingOptionsResponse:
        return await self.stub.NodeGroupGetOptions(
            pb.NodeGroupAutoscalingOptionsRequest(id=group, defaults=defaults), timeout=self.timeout)


def request_log_mark(api: Any) -> int:
    """A position in the lab API server's request log; pass it to `operator_requests`."""
    return len(api.audit.select())


def _leader_renewal(entry: Any) -> bool:
    """The leader's own Lease get/patch: periodic, on a clock of its own, caused by no RPC."""
    return entry.resource == "leases" and entry.name == LEASE_NAME


def operator_requests(api: Any, mark: int = 0) -> list[Any]:
    """Requests by the operator process (its client or kopf) logged after `mark`, reads and watches included,
    except the leader's renewals of its own Lease."""
    return [e for e in api.audit.select()[mark:]
            if any(agent in e.user_agent for agent in OPERATOR_AGENTS) and not _leader_renewal(e)]


def describe(entries: list[Any]) -> list[str]:
    return [f"{e.verb} {e.resource}{'/' + e.subresource if e.subresource else ''} {e.name} ({e.user_agent})"
            for e in entries]
