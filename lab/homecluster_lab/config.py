"""What a lab is asked to be (LabConfig), checked before anything starts, and the address helpers.

Every refusal is a LabError naming the command-line option and the fix.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from homecluster_lab import topology

MACHINE_KINDS = ("sim", "vm")
CONTROL_PLANES = ("memory", "kubernetes")  # the in-memory API server, or the real one (`make k8s`)


class LabError(RuntimeError):
    """The lab could not start; the message says which part and what to do."""


@dataclass
class LabConfig:
    slots: int = 3
    driver: str = "mixed"  # ipmi | redfish | wol | mixed
    machines: str = "sim"  # sim | vm
    boot_seconds: float = 2.0
    ready_taints_clear_seconds: float = 1.0
    kubeconfig: Path | None = None  # also write the kubeconfig here (removed again on exit)
    provider_address: str = "127.0.0.1:50051"  # port 0: pick a free one
    operator: bool = True
    require_operator: bool = False  # fail instead of running without an operator that is not usable
    vm_build_dir: Path | None = None  # --machines vm: where the VM image is built/cached (default build/vm)
    vm_hang: tuple[str, ...] = ()  # --machines vm: slots whose VM boot hangs (the image's hang knob)
    workdir: Path | None = None  # kept on exit when given; a temporary folder (removed) otherwise
    settings: dict[str, str] = field(default_factory=dict)  # controller settings, as strings by name
    group: str = topology.DEFAULT_GROUP
    namespace: str = topology.OPERATOR_NAMESPACE
    capacity: dict[str, str] = field(default_factory=lambda: {"cpu": "4", "memory": "8Gi", "pods": "110"})
    operator_args: tuple[str, ...] = ()
    provider_tls: bool = False  # the operator's provider over mTLS, as shipped (k8s.provider_tls), not plaintext
    ready_timeout: float = 60.0
    control_plane: str = "memory"  # memory | kubernetes (homecluster_lab.k8s.labcluster)
    gitops: bool = False  # kubernetes only: Flux applies the pool from a Git repository (k8s/gitops/)
    real_node: bool = False  # --real-node: a real kubelet with containerd (homecluster_lab.k8s.realnode)

    def validate(self) -> None:
        """Raise LabError naming the option and the fix; called before anything starts."""
        from homecluster.model.settings import Settings, SettingsError
        topology.slot_names(self.slots)  # ValueError for < 1
        if self.driver not in topology.DRIVERS:
            raise LabError(f"--driver {self.driver!r} is not one of {', '.join(topology.DRIVERS)}")
        if self.control_plane not in CONTROL_PLANES:
            raise LabError(f"--control-plane {self.control_plane!r} is not one of {', '.join(CONTROL_PLANES)}")
        if self.gitops and self.control_plane != "kubernetes":
            raise LabError("--gitops runs the real Flux, which needs the real API server: add --control-plane kubernetes")
        if self.real_node and self.control_plane != "kubernetes":
            raise LabError("--real-node needs --control-plane kubernetes (a real kubelet talks to kube-apiserver)")
        if self.machines not in MACHINE_KINDS:
            raise LabError(f"--machines {self.machines!r} is not one of {', '.join(MACHINE_KINDS)}")
        if self.boot_seconds < 0:
            raise LabError(f"--boot-seconds {self.boot_seconds}: must be >= 0 (seconds from power-on to a joined node)")
        split_address(self.provider_address)
        if self.vm_hang:
            if self.machines != "vm":
                raise LabError(f"--vm-hang {','.join(self.vm_hang)}: the hang knob belongs to VM machines; "
                               f"add --machines vm (simulated machines use the never-boots fault annotation)")
            unknown = sorted(set(self.vm_hang) - set(topology.slot_names(self.slots)))
            if unknown:
                raise LabError(f"--vm-hang {','.join(unknown)}: no such slot; the slots are "
                               f"{', '.join(topology.slot_names(self.slots))}")
        try:
            Settings.from_mapping(self.settings)
        except SettingsError as exc:
            raise LabError(str(exc)) from None


def split_address(address: str) -> tuple[str, int]:
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise LabError(f"--provider-address {address!r}: write HOST:PORT, e.g. 127.0.0.1:50051 (port 0 picks one)")
    return host.strip("[]"), int(port)


def free_port(host: str) -> int:
    """A port nobody listens on now, for a server in another process, which must be told its port: the caller
    checks the server listens there itself and retries on a new one if not (ports.program_port, ports.listens)."""
    from homecluster_lab.ports import program_port
    return program_port(host)


def vm_unavailable_reason() -> str | None:
    """Why --machines vm cannot run here (a missing program, named with its Debian package), or None."""
    from homecluster_lab.vm import host_tools
    absent = host_tools.missing({**host_tools.RUN_TOOLS, **host_tools.BUILDER_TOOLS})
    if absent:
        return host_tools.describe(absent, "--machines vm") + ", or use --machines sim"
    return None
