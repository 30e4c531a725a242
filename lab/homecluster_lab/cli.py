"""`homecluster lab`: the whole system on one machine, in one command.

Starts a LabCluster (API server, simulated machines, Job executor, operator), prints one line

    lab ready: kubeconfig=<path> provider=<host:port>

when everything serves, then shows the pool at a glance until Ctrl-C or SIGTERM, and stops everything
it started. `--demo` first narrates a scale-up and a scale-down through the autoscaler's protocol;
with `--control-plane kubernetes --autoscaler PATH` a real cluster-autoscaler runs beside the lab, and
`--demo` narrates what it does with real pods (autoscaler_demo.py).
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
import time
from pathlib import Path

from homecluster_lab import topology
from homecluster_lab.cluster import LabCluster, LabConfig, LabError
from homecluster.model.settings import Settings

log = logging.getLogger("homecluster_lab")

EXIT_USAGE = 2
EXIT_DEMO_FAILED = 3


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--slots", type=int, default=3, metavar="N", help="how many slots and machines (default 3)")
    parser.add_argument("--driver", choices=topology.DRIVERS, default="mixed",
                        help="how the machines are powered: one method for all, or ipmi/redfish/wol in turn "
                             "(default mixed)")
    parser.add_argument("--machines", choices=("sim", "vm"), default="sim",
                        help="simulated machines (fast, with fault knobs) or tiny qemu VMs (default sim)")
    parser.add_argument("--control-plane", choices=("memory", "kubernetes"), default="memory",
                        help="the lab's in-memory API server (starts in seconds), or the real kube-apiserver, etcd, "
                             "kube-controller-manager and kube-scheduler built by `make k8s` (default memory)")
    parser.add_argument("--gitops", action="store_true",
                        help="with --control-plane kubernetes: the pool lives in a Git repository in the lab's folder "
                             "and the real Flux (built by `make flux`) applies it every 10 s; prints how to push "
                             "a change (docs/gitops.md)")
    parser.add_argument("--real-node", action="store_true",
                        help="with --control-plane kubernetes: also run a real node on this machine (containerd, "
                             "a kubelet and kube-proxy built by `make realnode`; root; one per machine)")
    parser.add_argument("--vm-hang", action="append", default=[], metavar="SLOT",
                        help="with --machines vm: this slot's VM boot hangs before networking (the image's "
                             "hang knob; repeatable). While the lab runs, the never-boots fault annotation "
                             "sets it too")
    parser.add_argument("--boot-seconds", type=float, default=2.0, metavar="S",
                        help="seconds from power-on to a joined node (default 2)")
    parser.add_argument("--kubeconfig", type=Path, metavar="PATH",
                        help="also write the lab's kubeconfig here (deleted on exit); default: in the lab's folder")
    parser.add_argument("--provider-address", default="127.0.0.1:50051", metavar="HOST:PORT",
                        help="where the autoscaler provider listens (default 127.0.0.1:50051; port 0 picks one)")
    parser.add_argument("--autoscaler", metavar="PATH",
                        help="with --control-plane kubernetes: also run this cluster-autoscaler binary (PATH or "
                             "RELEASE=PATH, or `newest` from HOMECLUSTER_CLUSTER_AUTOSCALER and "
                             "~/.cache/homecluster/cluster-autoscaler/) against the lab, as config/autoscaler "
                             "ships it; with --demo it narrates a real scale-up and scale-down")
    parser.add_argument("--demo", action="store_true",
                        help="narrate a scale-up of two machines and a scale-down of one, then keep running")
    parser.add_argument("--demo-exit", action="store_true", help="with --demo: exit when the demo ends")
    parser.add_argument("--no-operator", action="store_true",
                        help="do not start `homecluster run` (the lab serves the provider itself; claims stay "
                             "pending)")
    parser.add_argument("--workdir", type=Path, metavar="DIR",
                        help="keep the lab's files (logs, pods, kubeconfig) here; default: a temporary folder "
                             "removed on exit")
    parser.add_argument("--refresh", type=float, default=1.0, metavar="S",
                        help="seconds between refreshes of the pool at a glance (default 1)")
    parser.add_argument("--verbose", "-v", action="store_true", help="log the lab's parts to stderr at INFO")
    timing = parser.add_argument_group("controller settings, passed to the operator (defaults: the model's)")
    defaults = Settings().as_strings()
    for name in Settings.names():
        timing.add_argument("--" + name.replace("_", "-"), dest="setting_" + name, metavar="VALUE",
                            help=f"default {defaults[name]}")


def config_from_args(args: argparse.Namespace) -> LabConfig:
    settings = {name: str(getattr(args, "setting_" + name)) for name in Settings.names()
                if getattr(args, "setting_" + name, None) is not None}
    return LabConfig(slots=args.slots, driver=args.driver, machines=args.machines, boot_seconds=args.boot_seconds,
                     kubeconfig=args.kubeconfig, provider_address=args.provider_address,
                     operator=not args.no_operator, require_operator=bool(args.demo), workdir=args.workdir,
                     settings=settings, vm_hang=tuple(getattr(args, "vm_hang", None) or ()),
                     control_plane=getattr(args, "control_plane", None) or "memory",
                     gitops=bool(getattr(args, "gitops", False)),
                     real_node=bool(getattr(args, "real_node", False)))


def lab_class(config: LabConfig) -> type[LabCluster]:
    """LabCluster, or its real-control-plane form for --control-plane kubernetes."""
    if config.gitops:
        from homecluster_lab.k8s.gitops.labcluster import GitOpsLabCluster
        return GitOpsLabCluster
    if config.control_plane == "kubernetes":
        from homecluster_lab.k8s.labcluster import RealLabCluster
        return RealLabCluster
    return LabCluster


def _autoscaler_problem(args: argparse.Namespace, config: LabConfig) -> str | None:
    """Why --autoscaler cannot run as asked, naming the fix; None when it can."""
    from homecluster_lab.k8s.autoscaler_builds import choose
    if config.control_plane != "kubernetes":
        return ("--autoscaler needs --control-plane kubernetes (cluster-autoscaler lists kinds the in-memory "
                "API server does not serve)")
    if args.no_operator:
        return "--autoscaler needs the operator (it serves the provider the autoscaler calls); drop --no-operator"
    try:
        args.autoscaler_build = choose(args.autoscaler)
    except ValueError as exc:
        return str(exc)
    return None


def _say(text: str) -> None:
    print(text, flush=True)


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    if args.demo_exit and not args.demo:
        print("homecluster lab: --demo-exit needs --demo", file=sys.stderr)
        return EXIT_USAGE
    try:
        config = config_from_args(args)
        config.validate()
    except (LabError, ValueError) as exc:
        print(f"homecluster lab: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if getattr(args, "autoscaler", None):
        problem = _autoscaler_problem(args, config)
        if problem:
            print(f"homecluster lab: {problem}", file=sys.stderr)
            return EXIT_USAGE
    if args.demo and args.no_operator:
        print("homecluster lab: --demo shows the operator at work; it cannot run with --no-operator",
              file=sys.stderr)
        return EXIT_USAGE
    if args.demo:
        from homecluster_lab.operator_proc import unavailable_reason
        reason = unavailable_reason()
        if reason is not None:
            print(f"homecluster lab --demo: {reason}.\nThe demo cannot show what it is for without it: claims "
                  "moving pending -> booting -> ready, machines powering on and joining, a scale-down "
                  "powering one off.\n`homecluster lab` without --demo starts everything else (API server, "
                  "machines, executor, provider).", file=sys.stderr)
            return EXIT_DEMO_FAILED
    from homecluster_lab import reaper
    reaper.become_subreaper()
    try:
        rc = asyncio.run(_main(config, args))
    finally:
        reaper.reap_descendants()
    return rc


async def _main(config: LabConfig, args: argparse.Namespace) -> int:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    received: list[str] = []

    def on_signal(sig: signal.Signals) -> None:
        received.append(sig.name)
        if len(received) > 1:  # a second Ctrl-C: the orderly stop is taking too long for the user
            print(f"{sig.name} again: ending every process the lab started, now", file=sys.stderr, flush=True)
            from homecluster_lab import reaper
            reaper.reap_descendants(grace=0.5)
            os._exit(130)
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal, sig)
    try:
        rc = await _run_lab(config, args, stop, time.monotonic())
    except LabError as exc:
        print(f"homecluster lab: {exc}", file=sys.stderr)
        rc = EXIT_DEMO_FAILED if args.demo else 1
    if received:
        print(f"lab stopped ({received[0]}); everything it started has been stopped", flush=True)
    return rc


async def _run_lab(config: LabConfig, args: argparse.Namespace, stop: asyncio.Event, started: float) -> int:
    from homecluster_lab import glance

    if stop.is_set():
        return 0
    starting = asyncio.create_task(lab_class(config)(config, say=_say).__aenter__())
    waiter = asyncio.create_task(stop.wait())
    await asyncio.wait({starting, waiter}, return_when=asyncio.FIRST_COMPLETED)
    waiter.cancel()
    if not starting.done():  # stopped while starting: __aenter__ cleans up what had started
        starting.cancel()
        await asyncio.gather(starting, return_exceptions=True)
        return 0
    lab: LabCluster = starting.result()
    extras = contextlib.AsyncExitStack()  # what runs beside the lab (the autoscaler), stopped before it
    try:
        for line in lab.describe_parts():
            _say(line)
        if lab.operator_note:
            _say(f"note: {lab.operator_note}; claims will stay pending (nothing acts on them)")
        ready = f"lab ready: kubeconfig={lab.kubeconfig_path} provider={lab.provider_address}"
        _say(ready)
        _say(f"(started in {time.monotonic() - started:.2f}s: "
             + ", ".join(f"{k} {v:.2f}s" for k, v in lab.timings.items()) + ")")
        rc = 0
        ca = None
        if getattr(args, "autoscaler_build", None) is not None:
            from homecluster_lab.k8s.autoscaler import Autoscaler
            ca = await extras.enter_async_context(Autoscaler.for_lab(lab, args.autoscaler_build))
            _say(f"cluster-autoscaler {ca.build.release} ({ca.build.path}): log {ca.log_path}, "
                 f"metrics {ca.metrics_url}/metrics")
        if args.demo:
            from homecluster_lab.demo import Demo, DemoFailed
            if ca is not None:
                from homecluster_lab.autoscaler_demo import AutoscalerDemo
                demo = asyncio.create_task(AutoscalerDemo(lab, ca, _say).run())
            else:
                demo = asyncio.create_task(Demo(lab, _say).run())
            waiter = asyncio.create_task(stop.wait())
            await asyncio.wait({demo, waiter}, return_when=asyncio.FIRST_COMPLETED)
            waiter.cancel()
            if not demo.done():
                demo.cancel()
                await asyncio.gather(demo, return_exceptions=True)
                return 0
            try:
                demo.result()
                if getattr(lab, "flux", None) is not None:
                    from homecluster_lab.k8s.gitops.demo import narrate_slot_edit
                    await narrate_slot_edit(lab, _say)
            except DemoFailed as exc:
                _say(f"demo failed: {exc}")
                rc = EXIT_DEMO_FAILED
            if args.demo_exit or rc:
                return rc
            _say("the demo is over; the lab keeps running (Ctrl-C stops it)")
        display = asyncio.create_task(glance.show(lab.snapshot, sys.stdout, tty=sys.stdout.isatty(),
                                                  interval=max(args.refresh, 0.2), header=ready))
        await stop.wait()
        display.cancel()
        await asyncio.gather(display, return_exceptions=True)
        return rc
    finally:
        await extras.aclose()
        _say("stopping the lab ...")
        await lab.__aexit__(None, None, None)
