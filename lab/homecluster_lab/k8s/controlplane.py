"""The real control plane on loopback, envtest-style: etcd, kube-apiserver, kube-controller-manager,
kube-scheduler, started in that order and each waited on until ready, stopped in the reverse order.

    async with RealControlPlane(workdir) as cp:
        cp.kubeconfig_path       # admin (system:masters), client certificate
        cp.url, cp.pki.ca_cert, cp.files.audit_log
        cp.pki.client("someone", ("some-group",))   # another identity's client certificate

Everything it makes lives under `workdir` (certificates, etcd's data, logs, the audit log); a workdir
it created itself (none given) is removed on stop.
"""
from __future__ import annotations

import shutil
from functools import partial
import ssl
import tempfile
from pathlib import Path

from homecluster_lab import ports as homecluster_ports
from homecluster_lab.config import LabError, free_port

from . import binaries, flags, pki
from .process import Component

HOST = "127.0.0.1"


class RealControlPlane:
    def __init__(self, workdir: Path | None = None, *, bin_dir: Path | None = None, timeout: float = 180.0,
                 audit_policy: str = flags.AUDIT_POLICY, node_monitor_grace: str | None = flags.NODE_MONITOR_GRACE):
        self.audit_policy = audit_policy  # the benchmarks log their writes' responses too (benchmarks/realaudit.py)
        self.node_monitor_grace = node_monitor_grace  # None: kube-controller-manager's default (flags.controller_manager)
        self._own_workdir = workdir is None
        self.workdir = Path(tempfile.mkdtemp(prefix="homecluster-k8s-")) if workdir is None else Path(workdir)
        self.bin_dir = bin_dir or binaries.bin_dir()
        self.timeout = timeout
        self.components: list[Component] = []
        self.ports: flags.Ports | None = None
        self.files: flags.Files | None = None
        self.pki: pki.Pki | None = None
        self.kubeconfig_path = self.workdir / "kubeconfig"
        self._admin: tuple[str, str] | None = None  # the admin's client certificate and key
        self._foreign: set[str] = set()  # components whose port another process held at start

    @property
    def url(self) -> str:
        assert self.ports is not None, "not started"
        return flags.apiserver_url(self.ports)

    def ssl_context(self) -> ssl.SSLContext:
        """Trusts the lab's CA and presents the admin's client certificate."""
        assert self.pki is not None and self._admin is not None, "not started"
        context = ssl.create_default_context(cafile=str(self.pki.ca_cert))
        context.load_cert_chain(*self._admin)
        return context

    async def start(self) -> None:
        missing = binaries.missing_reason(binaries.CONTROL_PLANE, self.bin_dir)
        if missing:
            raise LabError(missing)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.pki = pki.make(self.workdir / "pki")
        # the programs must be told their ports: picked, started, checked to listen there themselves, and
        # started again on new ports when another process took one meanwhile (homecluster_lab.ports)
        for attempt in range(1, homecluster_ports.PORT_TRIES + 1):
            try:
                await self._start_on(flags.Ports(*_distinct_free_ports(5)))
                return
            except BaseException as exc:
                again = isinstance(exc, LabError) and self._port_taken() and attempt < homecluster_ports.PORT_TRIES
                await self._stop_components(keep_logs_as=f"try{attempt}" if again else None)
                if not again:
                    await self.stop()
                    raise

    async def _start_on(self, ports: flags.Ports) -> None:
        self.ports, self._foreign = ports, set()
        self.files = self._files()
        shutil.rmtree(self.files.etcd_data, ignore_errors=True)  # a try before wrote its peer URL there
        self.files.audit_policy.write_text(self.audit_policy)
        url = self.url
        cert, key = self.pki.client(*pki.ADMIN)
        self._admin = (str(cert), str(key))
        pki.write_user_kubeconfig(self.kubeconfig_path, self.pki, url,
                                  {"client-certificate": str(cert), "client-key": str(key)})
        pki.write_kubeconfig(self.files.controller_manager_kubeconfig, self.pki, url, pki.CONTROLLER_MANAGER)
        pki.write_kubeconfig(self.files.scheduler_kubeconfig, self.pki, url, pki.SCHEDULER)
        # etcd's peer port is not checked: a taken one fails etcd's start, "address already in use"
        await self._run("etcd", flags.etcd, f"{flags.etcd_url(ports)}/readyz", False, ports.etcd_client)
        await self._run("kube-apiserver", flags.apiserver, f"{url}/readyz", self.ssl_context(), ports.apiserver)
        insecure = _no_verify()  # their serving certificates are self-signed at start
        await self._run("kube-controller-manager", partial(flags.controller_manager,
                                                           node_monitor_grace=self.node_monitor_grace),
                        f"https://{HOST}:{ports.controller_manager}/healthz", insecure, ports.controller_manager)
        await self._run("kube-scheduler", flags.scheduler,
                        f"https://{HOST}:{ports.scheduler}/healthz", insecure, ports.scheduler)

    def _port_taken(self) -> bool:
        return any(homecluster_ports.says_port_taken(c.log_tail(40)) or c.name in self._foreign
                   for c in self.components)

    def _files(self) -> flags.Files:
        assert self.pki is not None
        logs = self.workdir / "logs"
        logs.mkdir(exist_ok=True)
        return flags.Files(
            etcd_data=self.workdir / "etcd", ca_cert=self.pki.ca_cert, ca_key=self.pki.ca_key,
            serving_cert=self.pki.serving_cert, serving_key=self.pki.serving_key,
            service_account_key=self.pki.service_account_key, service_account_pub=self.pki.service_account_pub,
            audit_policy=self.workdir / "audit-policy.yaml", audit_log=logs / "audit.log",
            controller_manager_kubeconfig=self.workdir / "kube-controller-manager.kubeconfig",
            scheduler_kubeconfig=self.workdir / "kube-scheduler.kubeconfig")

    async def _run(self, name: str, argv_for, ready_url: str, ssl_context, *own_ports: int) -> None:
        argv = argv_for(self.bin_dir / name, self.ports, self.files)
        component = Component(name, argv, self.workdir / "logs" / f"{name}.log")
        self.components.append(component)
        await component.start()
        await component.wait_ready(ready_url, self.timeout, ssl_context)
        if not all(homecluster_ports.listens(component.pid or 0, port) for port in own_ports):
            self._foreign.add(name)  # what answered was another process on a port we picked
            raise LabError(f"{name}: another process listens on one of its ports {own_ports}")

    def log_path(self, name: str) -> Path:
        return self.workdir / "logs" / f"{name}.log"

    async def _stop_components(self, keep_logs_as: str | None = None) -> None:
        """Stop every started program; `keep_logs_as`: move their logs aside (<name>.<it>.log) for the next try."""
        while self.components:
            await self.components.pop().stop_keeping_log(keep_logs_as)

    async def stop(self) -> None:
        """Every started program, in the reverse order; then the workdir if this object made it."""
        await self._stop_components()
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    async def __aenter__(self) -> "RealControlPlane":
        await self.start()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.stop()


def _distinct_free_ports(count: int) -> list[int]:
    ports: list[int] = []
    while len(ports) < count:
        port = free_port(HOST)
        if port not in ports:
            ports.append(port)
    return ports


def _no_verify() -> ssl.SSLContext:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context
