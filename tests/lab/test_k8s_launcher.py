"""The real control plane's launcher when it cannot start: what it says, and that it leaves nothing running.

These need no Kubernetes build: a missing folder, and stand-in programs (shell scripts) in place of the
real ones. The launcher against the real programs is tests/k8s.
"""
from __future__ import annotations

import socket
import stat
from pathlib import Path

import pytest

from homecluster_lab.config import LabError
from homecluster_lab.k8s.controlplane import RealControlPlane


async def test_missing_programs_are_named_with_the_fix(tmp_path: Path) -> None:
    with pytest.raises(LabError) as caught:
        await RealControlPlane(tmp_path / "cp", bin_dir=tmp_path / "empty").start()
    text = str(caught.value)
    assert "etcd, kube-apiserver, kube-controller-manager, kube-scheduler missing" in text
    assert "make k8s" in text


def _program(directory: Path, name: str, body: str) -> None:
    path = directory / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def _stand_ins(tmp_path: Path) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    # etcd stands in as a server that answers /readyz; the API server exits at once, saying why
    _program(bin_dir, "etcd", 'for a in "$@"; do case $a in --listen-client-urls=*) url=${a#*=};; esac; done\n'
                              'port=${url##*:}\n'
                              'exec python3 -c "import http.server as h; h.HTTPServer((\'127.0.0.1\', $port), '
                              'type(\'H\', (h.BaseHTTPRequestHandler,), {\'do_GET\': lambda s: (s.send_response(200), '
                              's.end_headers())})).serve_forever()"')
    _program(bin_dir, "kube-apiserver", 'echo "E1201 run.go:72] command failed: a reason the test can read"; exit 1')
    for name in ("kube-controller-manager", "kube-scheduler"):
        _program(bin_dir, name, "exit 1")
    return bin_dir


async def test_a_program_that_exits_fails_the_start_with_its_log_and_stops_the_others(tmp_path: Path) -> None:
    cp = RealControlPlane(tmp_path / "cp", bin_dir=_stand_ins(tmp_path), timeout=30)
    with pytest.raises(LabError) as caught:
        await cp.start()
    text = str(caught.value)
    assert "kube-apiserver exited with code 1 before it was ready" in text
    assert "a reason the test can read" in text
    # the stand-in etcd that did start was stopped
    assert cp.components == []
    assert not _listening(cp.ports.etcd_client), "etcd's stand-in still listens"


def _listening(port: int) -> bool:
    """Whether anything listens on 127.0.0.1:port (/proc/net/tcp, state 0A = LISTEN)."""
    wanted = f"0100007F:{port:04X}"
    with open("/proc/net/tcp") as fh:
        return any(line.split()[1] == wanted and line.split()[3] == "0A" for line in fh.readlines()[1:])


def test_the_node_monitor_grace_is_the_labs_unless_a_lab_asks_for_the_default(tmp_path: Path) -> None:
    """The lab shortens it (flags.NODE_MONITOR_GRACE); a lab that sets None gets kube-controller-manager's own
    default (tests/k8s/test_k8s_stale_ready.py), with the rest of the command line unchanged."""
    from homecluster_lab.k8s import flags

    files = flags.Files(*(tmp_path / f"f{i}" for i in range(len(flags.Files.__dataclass_fields__))))
    ports = flags.Ports(1, 2, 3, 4, 5)
    lab = flags.controller_manager(tmp_path / "kcm", ports, files)
    default = flags.controller_manager(tmp_path / "kcm", ports, files, node_monitor_grace=None)
    assert f"--node-monitor-grace-period={flags.NODE_MONITOR_GRACE}" in lab
    assert not any(a.startswith("--node-monitor-grace-period") for a in default)
    assert [a for a in lab if not a.startswith("--node-monitor-grace-period")] == default
    assert RealControlPlane(tmp_path / "cp").node_monitor_grace == flags.NODE_MONITOR_GRACE


@pytest.mark.parametrize("reuseport", [False, True], ids=["etcd-cannot-bind", "another-listener-answers"])
async def test_a_port_taken_after_the_pick_starts_the_programs_again_on_new_ports(tmp_path: Path, monkeypatch,
                                                                                  reuseport: bool) -> None:
    """Another process holds etcd's first client port: its bind fails ("Address already in use"), or, bound with
    SO_REUSEPORT as the stand-in's is not, it answers /readyz itself; either way etcd starts again on new ports,
    and the start goes on to the next program (here the API server's stand-in, which exits)."""
    from homecluster_lab.k8s import controlplane
    squatter = socket.socket()
    if reuseport:
        squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    squatter.bind(("127.0.0.1", 0))
    squatter.listen()
    answering = None
    if reuseport:  # a listener that answers /readyz on the port, as another lab's etcd would
        import http.server
        import threading
        answering = http.server.HTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
        answering.socket.close()
        answering.socket = squatter
        answering.RequestHandlerClass = type("H", (http.server.BaseHTTPRequestHandler,), {
            "do_GET": lambda s: (s.send_response(200), s.end_headers()), "log_message": lambda *a: None})
        threading.Thread(target=answering.serve_forever, daemon=True).start()
    picks: list[int] = []
    real = controlplane.free_port
    monkeypatch.setattr(controlplane, "free_port",
                        lambda host: picks.append(squatter.getsockname()[1] if not picks else real(host)) or picks[-1])
    cp = RealControlPlane(tmp_path / "cp", bin_dir=_stand_ins(tmp_path), timeout=30)
    try:
        with pytest.raises(LabError) as caught:
            await cp.start()
    finally:
        if answering is not None:
            answering.shutdown()
        squatter.close()
    assert "kube-apiserver exited with code 1 before it was ready" in str(caught.value)  # etcd got past
    assert len(picks) == 10 and cp.ports.etcd_client != picks[0], picks  # a second start, on new ports
