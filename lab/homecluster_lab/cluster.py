"""LabCluster: the whole lab as one async context manager.

    async with LabCluster(LabConfig(slots=3, boot_seconds=1)) as lab:
        lab.kubeconfig_path, lab.provider_address   # what kubectl and cluster-autoscaler would use
        lab.machine("worker-01").power_state()     # the simulated machine itself

Entering starts, in this order: the in-memory API server with our CRDs; the operator's namespace;
the simulated machines (their BMCs answer on loopback, their kubelets register corev1 Nodes once
booted); the default Group, one slot per machine and one credentials Secret per slot; the loop that
applies fault annotations; the Job executor; then either the operator (`homecluster run`, a
subprocess, which serves the autoscaler provider and the admission webhook) or, without it, the
provider in-process, so the provider address always answers. It returns once the provider reports
SERVING (its cache has listed every kind) and the webhook is registered. Leaving stops everything in
the reverse order; a failure while starting stops what had started.

Composable on purpose: integration tests start a LabCluster with `operator=False` and run the
operator their own way, or kill and restart `lab.operator` to test crash recovery.
"""
from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from homecluster import names
from homecluster.operator.main import GROUP_WEBHOOK_PATH, SLOT_WEBHOOK_PATH, WEBHOOK_PATH
from homecluster_lab import ports, readiness, topology
from homecluster_lab.config import LabConfig, LabError, free_port, split_address, vm_unavailable_reason
from homecluster_lab.faultknobs import FaultSync, describe
from homecluster_lab.labapi import LabApi
from homecluster_lab.operator_proc import OperatorOptions, OperatorProcess, unavailable_reason
from homecluster_lab.webhook_registration import webhook_configuration

log = logging.getLogger("homecluster_lab")

SLOTS = f"{names.SLOT_PLURAL}.{names.API_GROUP}"
CLAIMS = f"{names.CLAIM_PLURAL}.{names.API_GROUP}"


def _b64(data: dict[str, str]) -> dict[str, str]:
    return {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}


class LabCluster:
    """See the module docstring."""

    # where the simulated machines' BMCs and boot ports listen; the lab with a real node sets the node's bridge
    # address (k8s/labcluster.py), so that a lifecycle Job's pod there reaches them
    bmc_host = "127.0.0.1"

    def __init__(self, config: LabConfig | None = None, *, say: Callable[[str], None] | None = None):
        self.config = config or LabConfig()
        self.config.validate()
        self._say = say or (lambda text: log.info("%s", text))
        self.workdir = Path()
        self.api: LabApi = None  # type: ignore[assignment]  # set by _start_api: the in-memory server here
        self.fleet: Any = None  # machines.fleet.Fleet
        self.executor: Any = None  # executor.JobExecutor
        self.operator: OperatorProcess | None = None
        self.provider_tls: Any = None  # k8s.provider_tls.ProviderTLS with config.provider_tls: the provider's mTLS
        self.provider: Any = None  # provider.server.ProviderServer when served in-process
        self.provider_address = ""
        self.kubeconfig_path = Path()
        self.webhook_url: str | None = None
        self.operator_note = ""  # why the operator is not running, when it is not
        self.slot_names = topology.slot_names(self.config.slots)
        self._stack = contextlib.AsyncExitStack()
        self._faults: FaultSync | None = None
        self.timings: dict[str, float] = {}

    # lifecycle --------------------------------------------------------------------------------------------
    async def __aenter__(self) -> "LabCluster":
        try:
            await self._start()
        except BaseException:
            await self._stack.aclose()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._stack.aclose()

    async def _timed(self, part: str, coro: Any) -> Any:
        started = time.monotonic()
        result = await coro
        self.timings[part] = time.monotonic() - started
        return result

    async def _start(self) -> None:
        cfg = self.config
        if cfg.workdir is None:
            self.workdir = Path(tempfile.mkdtemp(prefix="homecluster-lab-"))
            self._stack.callback(shutil.rmtree, self.workdir, True)
        else:
            self.workdir = Path(cfg.workdir).resolve()
            self.workdir.mkdir(parents=True, exist_ok=True)
        await self._timed("api server", self._start_api())
        await self._timed("machines", self._start_machines())
        await self._timed("pool objects", self._create_pool())
        self._stack.push_async_callback(self._cancel, asyncio.create_task(self._fault_loop(), name="lab-faults"))
        await self._timed("job executor", self._start_executor())
        if cfg.operator:
            reason = unavailable_reason()
            if reason is None:
                await self._timed("operator", self._start_operator())
            elif cfg.require_operator:
                raise LabError(reason)
            else:
                self.operator_note = reason
        if self.operator is None:
            await self._timed("provider", self._start_provider_here())

    async def _cancel(self, task: asyncio.Task) -> None:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    # parts -------------------------------------------------------------------------------------------------
    async def _start_api(self) -> None:
        from homecluster.api.crd import all_crds
        from homecluster_lab.apiserver import LabAPIServer
        from homecluster_lab.apiserver import kubeconfig as kc

        self.api = LabAPIServer(workdir=self.workdir / "api", gc_interval=0.2)
        await self._stack.enter_async_context(self.api)
        for crd in all_crds().values():
            await self.api.create(crd)
        await self.api.create(topology.namespace(self.config.namespace))
        self.kubeconfig_path = self.api.kubeconfig_path
        wanted = self.config.kubeconfig
        if wanted is not None:
            wanted = Path(wanted).expanduser().resolve()
            _refuse_foreign_kubeconfig(wanted)
            kc.write(wanted, self.api.url, self.api.ca_pem)
            self._stack.callback(_unlink, wanted)
            self.kubeconfig_path = wanted

    async def _start_machines(self) -> None:
        from homecluster_lab.machines.boot import Faults
        from homecluster_lab.machines.fleet import Fleet, MachineSpec
        from homecluster_lab.machines.machine import Taint

        if self.config.machines == "vm":
            self.fleet = await self._vm_fleet()
        else:
            self.fleet = Fleet(workdir=self.workdir / "machines", bmc_host=self.bmc_host, **self._kubelet_credentials())
        await self._stack.enter_async_context(self.fleet)
        labels = dict(topology.group(self.config.group, 1, self.config.capacity)["spec"]["template"]["labels"])
        specs = [MachineSpec(name=name, method=topology.method_for(i, self.config.driver),
                             boot_seconds=self.config.boot_seconds,
                             ready_taints_clear_seconds=self.config.ready_taints_clear_seconds,
                             labels={**labels, topology.LAB_LABEL: name}, capacity=dict(self.config.capacity),
                             readiness_taints=(Taint(topology.READINESS_TAINT),),
                             faults=Faults(never_boots=True) if name in self.config.vm_hang else None)
                 for i, name in enumerate(self.slot_names)]
        await self.fleet.start(specs)

    def _kubelet_credentials(self) -> dict[str, Any]:
        """How the simulated machines' kubelets authenticate (Fleet's kubeconfig options): the lab's kubeconfig."""
        return {"kubeconfig": self.api.kubeconfig_path}

    async def _vm_fleet(self) -> Any:
        """--machines vm: the image (built once, then cached) and a VmFleet (homecluster_lab.vm.fleet)."""
        reason = vm_unavailable_reason()
        if reason is not None:
            raise LabError(reason)
        from homecluster_lab.vm.fleet import VmFleet
        from homecluster_lab.vm.image import build_report

        try:
            report = await asyncio.to_thread(build_report, self.config.vm_build_dir)
        except Exception as exc:  # noqa: BLE001 - apt, dpkg-deb, depmod: say which and stop
            raise LabError(f"--machines vm: building the VM image failed: {exc}; try `homecluster vm-image` "
                           f"to see the whole error") from exc
        self._say(f"VM image {'cached' if report.cache_hit else 'built'} in {report.seconds:.1f}s "
                  f"(kernel {report.kernel_release}) in {report.paths.kernel.parent}")
        return VmFleet(report.paths, workdir=self.workdir / "machines", **self._kubelet_credentials())

    async def _create_pool(self) -> None:
        ns = self.config.namespace
        await self.api.create(topology.group(self.config.group, self.config.slots, self.config.capacity))
        for name in self.slot_names:
            endpoints = self.fleet.endpoints[name]
            secret = topology.secret_name(name, endpoints.method)
            body = topology.secret(secret, ns, {})
            del body["stringData"]
            body["data"] = _b64(endpoints.secret_data())
            await self.api.create(body)
            await self.api.create(topology.slot(name, self.config.group, endpoints.power_spec(secret, ns),
                                                endpoints.boot_check))
        self._faults = FaultSync(self.fleet.machines, self._say)

    async def _fault_loop(self) -> None:
        while True:
            try:
                assert self._faults is not None
                self._faults.apply(self.api.list(SLOTS))
            except Exception:  # noqa: BLE001 - a bad pass must not end the loop
                log.exception("lab: applying fault annotations failed")
            await asyncio.sleep(0.5)

    async def _start_executor(self) -> None:
        from homecluster_lab.executor import ExecutorConfig, JobExecutor

        cfg = ExecutorConfig(kubeconfig_path=self.api.kubeconfig_path, workdir=self.workdir / "pods",
                             namespace=self.config.namespace, collections_path=self._collections_path(),
                             node_name="homecluster-lab")
        self.executor = JobExecutor(cfg)
        await self._stack.enter_async_context(self.executor)

    def _collections_path(self) -> Path:
        """A collections path where `homecluster.infra` is this working tree (what `make collection` makes
        in build/; made here in the lab's folder so the lab works without it)."""
        from homecluster_lab.executor.config import REPO_ROOT
        root = self.workdir / "collections"
        link = root / "ansible_collections" / "homecluster" / "infra"
        link.parent.mkdir(parents=True, exist_ok=True)
        if not link.exists():
            link.symlink_to(REPO_ROOT, target_is_directory=True)
        return root

    async def _start_operator(self) -> None:
        from homecluster import tls

        ca = tls.make_ca("homecluster-lab-webhook-ca")
        cert, key = tls.issue(ca, "homecluster-webhook", ["127.0.0.1", "localhost"]).write(self.workdir / "tls",
                                                                                           "webhook")
        self._stack.push_async_callback(self._stop_operator)
        if self.config.provider_tls and self.provider_tls is None:
            from homecluster_lab.k8s.provider_tls import ProviderTLS
            self.provider_tls = ProviderTLS.create(self.workdir / "provider-tls", self.config.namespace)
        host, fixed = split_address(self.config.provider_address)
        for attempt in range(1, ports.PORT_TRIES + 1):  # the operator must be told its ports: see ports.py
            port, webhook_port = fixed or ports.program_port(host), ports.program_port("127.0.0.1")
            self.provider_address, webhook_address = f"{host}:{port}", f"127.0.0.1:{webhook_port}"
            options = OperatorOptions(kubeconfig=self._operator_kubeconfig(), namespace=self.config.namespace,
                                      provider_address=self.provider_address, webhook_address=webhook_address,
                                      webhook_cert=cert, webhook_key=key, settings=dict(self.config.settings),
                                      extra_args=self.config.operator_args,
                                      provider_tls=self.provider_tls.operator_args() if self.provider_tls else None)
            self.operator = OperatorProcess(options, self.workdir / "operator.log")
            since = self.operator.log_path.stat().st_size if self.operator.log_path.exists() else 0
            await self.operator.start()
            taken = [p for p in (port, webhook_port) if await self._own_port(p, since) == "taken"]
            if not taken:
                break
            await self.operator.stop()  # another process holds a port we picked: again, on new ones
            log.warning("lab: the operator's port(s) %s were taken by another process; starting it again", taken)
            if fixed or attempt == ports.PORT_TRIES:
                raise LabError(f"the operator could not listen on {host}:{port} / 127.0.0.1:{webhook_port}: "
                               f"another process holds them; see {self.workdir / 'operator.log'}")
        await self._wait_serving(lambda: self.operator.exited() if self.operator else None)
        # the provider serves before kopf opens the webhook's port; with failurePolicy Fail, every
        # NodeClaim create would be refused ("connection refused") until it listens
        await self._wait_listening(webhook_address)
        self.webhook_url = f"https://{webhook_address}{WEBHOOK_PATH}"
        await self.api.create(webhook_configuration(
            self.webhook_url, ca.cert_pem, f"https://{webhook_address}{GROUP_WEBHOOK_PATH}",
            f"https://{webhook_address}{SLOT_WEBHOOK_PATH}"))

    async def _own_port(self, port: int, since: int) -> str:
        """"ours" once the operator alone listens on `port`, "taken" if another process does or its log (from
        offset `since`: this start's) says so (ports.wait_own)."""
        operator = self.operator
        assert operator is not None and operator.pid is not None

        def log_text() -> str:
            with open(operator.log_path, "rb") as f:
                f.seek(since)
                return f.read().decode(errors="replace")
        return await ports.wait_own(operator.pid, port, self.config.ready_timeout, operator.exited, log_text)

    def _operator_kubeconfig(self) -> Path:
        """The operator's credentials: the lab's kubeconfig (the real control plane's lab: its ServiceAccount's)."""
        return self.api.kubeconfig_path

    async def _stop_operator(self) -> None:
        if self.operator is not None:
            await self.operator.stop()

    async def restart_operator(self, *, kill: bool = False) -> None:
        """Stop the operator (SIGTERM, or SIGKILL with `kill`: a crash) and start it again with the same
        options, then wait until its provider serves. For crash-recovery tests."""
        if self.operator is None:
            raise LabError("restart_operator: the lab runs without an operator")
        if kill:
            await self.operator.kill()
        else:
            await self.operator.stop()
        self.operator = OperatorProcess(self.operator.options, self.operator.log_path)
        await self.operator.start()
        await self._wait_serving(lambda: self.operator.exited() if self.operator else None)
        if self.webhook_url:
            await self._wait_listening(self.operator.options.webhook_address)

    async def _start_provider_here(self) -> None:
        """Without the operator, the provider still answers (claims it creates stay pending: nothing acts)."""
        from homecluster.model.settings import Settings
        from homecluster.provider.actions import ProviderSettings
        from homecluster.kube.cache import Cache
        from homecluster.provider.server import ProviderServer
        from homecluster_lab.provider.watch import client_from_kubeconfig, watch_into
        from homecluster_lab.provider.writer import claim_writer

        client = client_from_kubeconfig(str(self.api.kubeconfig_path))
        self._stack.push_async_callback(client.close)
        cache = Cache()
        watcher = asyncio.create_task(watch_into(cache, client=client), name="lab-provider-watch")
        self._stack.push_async_callback(self._cancel, watcher)
        settings = ProviderSettings(model=Settings.from_mapping(self.config.settings))
        self.provider = ProviderServer(cache, claim_writer(client), settings,
                                       address=self.config.provider_address, insecure=True)
        port = await self.provider.start()
        self._stack.push_async_callback(self.provider.stop)
        host, _ = split_address(self.config.provider_address)
        self.provider_address = f"{host}:{port}"
        await self._wait_serving(lambda: None)

    async def _wait_listening(self, address: str) -> None:
        await readiness.wait_listening(address, self.config.ready_timeout, "the operator's webhook",
                                       str(self.workdir / "operator.log"))

    async def _wait_serving(self, exited: Callable[[], int | None]) -> None:
        await readiness.wait_serving(self.provider_address, self.config.ready_timeout, exited,
                                     lambda: self.operator.log_tail() if self.operator else "",
                                     str(self.workdir / "operator.log"), tls=self.provider_tls)

    # what the glance, the demo and tests read ------------------------------------------------------------
    def slots(self) -> list[dict[str, Any]]:
        return self.api.list(SLOTS)

    def claims(self) -> list[dict[str, Any]]:
        return self.api.list(CLAIMS)

    def machine(self, slot: str) -> Any:
        """The simulated machine behind a slot (SimMachine: power_state(), set_faults(), events)."""
        return self.fleet.machines[slot]

    def machine_summary(self) -> dict[str, str]:
        """slot -> "on" / "off", followed by the fault knobs that are set."""
        out = {}
        for name, machine in self.fleet.machines.items():
            knobs = describe(machine.faults)
            out[name] = machine.power_state() + (f" [{knobs}]" if knobs else "")
        return out

    def snapshot(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, str]]:
        return self.slots(), self.claims(), self.machine_summary()

    def describe_parts(self) -> list[str]:
        """One line per part, for the banner: what runs and where."""
        methods = {}
        for name in self.slot_names:
            m = self.fleet.endpoints[name].method
            methods[m] = methods.get(m, 0) + 1
        operator = (f"homecluster run (pid {self.operator.pid}), log {self.operator.log_path}" if self.operator
                    else f"not running: {self.operator_note or 'disabled by --no-operator'}")
        return [
            f"api server   {self.api.url}  (kubectl --kubeconfig {self.kubeconfig_path} get homecluster)",
            f"machines     {len(self.slot_names)} "
            + ("qemu VMs" if self.config.machines == "vm" else "simulated") + ", "
            + ", ".join(f"{n} {m}" for m, n in sorted(methods.items()))
            + (f", state under {self.fleet.state_root}" if self.config.machines == "vm"
               else f", boot {self.config.boot_seconds:g}s"),
            f"pool         Group {self.config.group!r}, slots {self.slot_names[0]}..{self.slot_names[-1]}, "
            f"Secrets in {self.config.namespace}",
            f"executor     Jobs in {self.config.namespace} run here; pods under {self.workdir / 'pods'}",
            f"operator     {operator}",
            f"provider     {self.provider_address} (externalgrpc, plaintext on loopback"
            + (", served by the lab itself)" if self.provider is not None else ")"),
            f"webhook      {self.webhook_url or 'not registered'}",
            f"workdir      {self.workdir}",
        ]


def _refuse_foreign_kubeconfig(path: Path) -> None:
    """Never overwrite (and later delete) a kubeconfig that is not a lab's, such as ~/.kube/config."""
    from homecluster_lab.apiserver.kubeconfig import CONTEXT
    if not path.exists():
        return
    try:
        current = (yaml.safe_load(path.read_text()) or {}).get("current-context")
    except (OSError, yaml.YAMLError):
        current = None
    if current != CONTEXT:
        raise LabError(f"--kubeconfig {path}: the file exists and is not a lab kubeconfig (its current-context "
                       f"is {current!r}); the lab would overwrite it and delete it on exit. Choose another path")


def _unlink(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


# LabConfig, LabError, free_port, split_address and webhook_configuration live in their own modules and are
# re-exported here, where the lab's users (the CLI, tests, benchmarks) have always imported them
__all__ = ["LabCluster", "LabConfig", "LabError", "free_port", "split_address", "webhook_configuration"]
