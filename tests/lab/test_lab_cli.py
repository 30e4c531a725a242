"""`homecluster lab` as a user runs it: a subprocess, its `lab ready` line, kubectl, Ctrl-C and SIGTERM.

The process checks walk /proc: every descendant of the lab is recorded while it runs (the sshd of a
booted Wake-on-LAN machine and a Job's process among them), and after the signal none of them may be
alive, and no process may still mention the lab's folder on its command line.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from homecluster_lab.executor.process import process_tree

pytestmark = pytest.mark.lab
READY = "lab ready: "


class LabProcess:
    """`homecluster lab ...` in a subprocess, its stdout collected by a thread."""

    def __init__(self, args: list[str], workdir: Path):
        self.workdir = workdir
        self.lines: list[str] = []
        self.started = time.monotonic()
        self.proc = subprocess.Popen([sys.executable, "-m", "homecluster", "lab", *args, "--workdir", str(workdir)],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1,
                                     env={**os.environ, "PYTHONUNBUFFERED": "1"}, start_new_session=True)
        self.err: list[str] = []
        self._reader = threading.Thread(target=self._read, args=(self.proc.stdout, self.lines), daemon=True)
        self._err_reader = threading.Thread(target=self._read, args=(self.proc.stderr, self.err), daemon=True)
        self._reader.start()
        self._err_reader.start()

    @staticmethod
    def _read(stream, into: list[str]) -> None:
        for line in stream:
            into.append(line.rstrip("\n"))

    def wait_for(self, prefix: str, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = next((line for line in self.lines if line.startswith(prefix)), None)
            if found:
                return found
            if self.proc.poll() is not None:
                time.sleep(0.2)
                raise AssertionError(f"lab exited ({self.proc.returncode}) before {prefix!r}:\n" + self.output())
            time.sleep(0.02)
        raise AssertionError(f"no {prefix!r} within {timeout}s:\n" + self.output())

    def ready(self, timeout: float = 60) -> dict[str, str]:
        line = self.wait_for(READY, timeout)
        return dict(part.split("=", 1) for part in line[len(READY):].split())

    def output(self) -> str:
        return "\n".join(self.lines) + "\n-- stderr --\n" + "\n".join(self.err[-40:])

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30) -> int:
        """SIGINT goes to the whole process group, as a terminal's Ctrl-C does; SIGTERM to the lab only."""
        if self.proc.poll() is None:
            if sig == signal.SIGINT:
                os.killpg(self.proc.pid, sig)
            else:
                self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        finally:
            self._reader.join(2)
            self._err_reader.join(2)

    def exit_code(self, timeout: float = 30) -> int:
        """Wait for the lab to exit by itself."""
        rc = self.proc.wait(timeout)
        self._reader.join(2)
        self._err_reader.join(2)
        return rc

    def kill(self) -> None:
        if self.proc.poll() is None:
            for pid in reversed(process_tree(self.proc.pid)):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            self.proc.wait(10)


@pytest.fixture
def start_lab(tmp_path: Path):
    started: list[LabProcess] = []

    def start(*args: str) -> LabProcess:
        lab = LabProcess(list(args), tmp_path / f"lab-{len(started)}")
        started.append(lab)
        return lab
    yield start
    for lab in started:
        lab.kill()


def kubectl(kubeconfig: str, *args: str, home: Path) -> str:
    home.mkdir(exist_ok=True)
    done = subprocess.run(["kubectl", "--kubeconfig", kubeconfig, "--cache-dir", str(home / "cache"), *args],
                          capture_output=True, text=True, timeout=60, env={**os.environ, "HOME": str(home)})
    assert done.returncode == 0, done.stderr
    return done.stdout


def start_time(pid: int) -> str | None:
    """The process's start time in clock ticks (pid + start time identifies a process across pid reuse)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    return stat[stat.rfind(b")") + 2:].split()[19].decode()


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def survivors(recorded: dict[int, tuple[str | None, str]], workdir: Path) -> list[str]:
    """Recorded descendants still alive (same pid and start time), and any process naming the workdir."""
    left = [f"{pid} {cmd}" for pid, (started, cmd) in recorded.items()
            if started is not None and start_time(pid) == started and not _zombie(pid)]
    mine = str(workdir)
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and int(entry.name) != os.getpid() and mine in cmdline(int(entry.name)) \
                and not _zombie(int(entry.name)):
            left.append(f"{entry.name} {cmdline(int(entry.name))} (mentions the lab's folder)")
    return left


def _zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return True
    return stat[stat.rfind(b")") + 2:].split()[0] == b"Z"


def magic_packet(mac: str) -> bytes:
    return b"\xff" * 6 + bytes.fromhex(mac.replace(":", "")) * 16


def test_ten_slots_ready_quickly_and_kubectl_lists_them(start_lab, tmp_path):
    lab = start_lab("--slots", "10", "--no-operator", "--provider-address", "127.0.0.1:0")
    ready = lab.ready(timeout=60)
    took = time.monotonic() - lab.started
    print(f"\n`homecluster lab --slots 10 --no-operator`: lab ready after {took:.2f}s (process start included)")
    timings = next((line for line in lab.lines if line.startswith("(started in")), "")
    print(f"  the lab's own account: {timings}")
    assert took < 60  # a hang, not a speed target: the figure above is the measurement
    host, port = ready["provider"].rsplit(":", 1)
    assert host == "127.0.0.1" and int(port) > 0
    out = kubectl(ready["kubeconfig"], "get", "slots", home=tmp_path / "home")
    rows = out.strip().splitlines()
    assert rows[0].split() == ["NAME", "GROUP", "POWER", "PHASE", "CLAIM", "ATTEMPT", "AGE"]
    assert [r.split()[0] for r in rows[1:]] == [f"worker-{i:02d}" for i in range(1, 11)]
    # the glance is printed once (stdout is not a terminal), with every slot
    lab.wait_for("---- pool at a glance", 10)
    time.sleep(0.5)
    assert sum(1 for line in lab.lines if line.startswith("worker-")) == 10
    assert lab.stop(signal.SIGTERM) == 0


def test_a_hundred_slots(start_lab, tmp_path):
    lab = start_lab("--slots", "100", "--no-operator", "--provider-address", "127.0.0.1:0", "--boot-seconds", "1")
    ready = lab.ready(timeout=120)
    print(f"\n`homecluster lab --slots 100 --no-operator`: lab ready after {time.monotonic() - lab.started:.2f}s")
    names = kubectl(ready["kubeconfig"], "get", "slots", "-o", "name", home=tmp_path / "home").split()
    assert len(names) == 100 and names[-1] == "node.infra.homecluster.dev/worker-100"
    assert lab.stop(signal.SIGTERM) == 0


@pytest.mark.parametrize("sig, operator", [(signal.SIGINT, False), (signal.SIGTERM, False), (signal.SIGINT, True)],
                         ids=["ctrl-c", "sigterm", "ctrl-c-with-operator"])
def test_nothing_the_lab_started_survives_it(start_lab, tmp_path, sig, operator):
    if operator:
        from homecluster_lab.operator_proc import unavailable_reason
        if unavailable_reason() is not None:
            pytest.skip(f"needs the operator: {unavailable_reason()}")
    lab = start_lab("--slots", "3", "--provider-address", "127.0.0.1:0", "--boot-seconds", "0.3",
                    *(() if operator else ("--no-operator",)))
    ready = lab.ready()
    home = tmp_path / "home"
    # boot the Wake-on-LAN machine (worker-03) with a real magic packet: once its OS is up, its SSH port hands each
    # connection to a real `sshd -i` (homecluster_lab.machines.ssh), which the open connection below keeps running
    slot = json.loads(kubectl(ready["kubeconfig"], "get", "slot", "worker-03", "-o", "json", home=home))
    wol = slot["spec"]["power"]["wol"]
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.sendto(magic_packet(wol["macAddress"]), (wol["broadcastAddress"], wol["port"]))
    # and a Job in the operator's namespace, which the executor runs as a local process
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "sleeper", "namespace": "homecluster-system"},
           "spec": {"backoffLimit": 0, "template": {"spec": {"restartPolicy": "Never", "containers": [
               {"name": "c", "image": "busybox", "command": ["sleep", "300"]}]}}}}
    subprocess.run(["kubectl", "--kubeconfig", ready["kubeconfig"], "create", "-f", "-"], input=json.dumps(job),
                   text=True, check=True, capture_output=True, env={**os.environ, "HOME": str(home)})

    ssh = slot["spec"]["power"]["ssh"]
    client: socket.socket | None = None
    recorded: dict[int, tuple[str | None, str]] = {}
    deadline = time.monotonic() + 90  # a wait, not a speed target: under CI load the lab gets a slice of 2 cores
    while time.monotonic() < deadline:
        if client is None:
            try:  # refused until worker-03's OS is up
                client = socket.create_connection((ssh["host"], ssh.get("port", 22)), timeout=1)
            except OSError:
                client = None
        for pid in process_tree(lab.proc.pid):
            started = start_time(pid)
            # re-read a known process's command line: caught between fork and exec, a child still shows
            # the lab's own command line (the pod's `sleep 300` was missed that way under load)
            if pid != lab.proc.pid and started is not None and recorded.get(pid, (started,))[0] == started:
                recorded[pid] = (started, cmdline(pid) or recorded.get(pid, (None, ""))[1])
        cmds = [cmd for _, cmd in recorded.values()]
        if any("sshd" in c for c in cmds) and any(c.startswith("sleep 300") for c in cmds):
            break
        time.sleep(0.1)
    cmds = [cmd for _, cmd in recorded.values()]
    assert any("sshd" in c for c in cmds), f"worker-03's sshd never ran: {cmds}\n{lab.output()}"
    assert any(c.startswith("sleep 300") for c in cmds), f"the Job's process never ran: {cmds}\n{lab.output()}"
    if operator:
        assert any(" homecluster_lab.operator_boot run " in c for c in cmds), \
            f"the operator is not a child of the lab: {cmds}"

    rc = lab.stop(sig, timeout=30)
    if client is not None:
        client.close()
    assert rc == 0, lab.output()
    assert f"lab stopped ({sig.name})" in lab.output()
    assert survivors(recorded, lab.workdir) == []


def test_demo_without_an_operator_is_refused_saying_why(start_lab):
    # the demo shows the operator at work: asking for it without one is a usage error, said up front
    lab = start_lab("--demo", "--demo-exit", "--no-operator", "--slots", "3", "--provider-address", "127.0.0.1:0")
    assert lab.exit_code() == 2
    assert "cannot run with --no-operator" in lab.output()
    assert "lab ready" not in lab.output()


def test_demo_narrates_a_scale_up_and_a_scale_down_and_exits(start_lab):
    from homecluster_lab.operator_proc import unavailable_reason
    reason = unavailable_reason()
    if reason is not None:
        pytest.skip(f"needs the operator: {reason}")
    lab = start_lab("--demo", "--demo-exit", "--slots", "3", "--boot-seconds", "1", "--provider-address",
                    "127.0.0.1:0", "--startup-job-timeout", "60s", "--job-poll-interval", "2s",
                    "--registration-wait", "20s", "--readiness-gate", "20s", "--uncordon-retry-ceiling", "1s",
                    "--slack", "5s", "--shutdown-job-timeout", "60s")
    rc = lab.exit_code(240)
    out = lab.output()
    print(out)
    assert rc == 0, out
    assert "both claims are ready" in out and "completed after" in out and "summary:" in out


def test_bad_flags_are_refused_before_anything_starts(start_lab):
    lab = start_lab("--slots", "0")
    assert lab.exit_code() == 2
    assert "--slots 0" in lab.output()
    lab = start_lab("--startup-job-timeout", "soon", "--no-operator")
    assert lab.exit_code() == 2
    assert "startup_job_timeout" in lab.output()
