"""The lifecycle playbooks as a Job runs them (ansible-runner, vars in a JSON file, credentials in files)
and power.yml as a person runs it (ansible-playbook against an inventory), against loopback peers."""
from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import threading
import time

from hc_ansible import VENV_BIN, ansible_env, run_playbook


def credentials(tmp_path, username="admin", password="pw", private_key=None, name="credentials"):
    directory = tmp_path / name
    directory.mkdir(exist_ok=True)
    (directory / "username").write_text(username)
    (directory / "password").write_text(password + "\n")  # Secrets made from files often end in a newline
    if private_key:
        (directory / "privateKey").write_bytes(private_key.read_bytes())
    return directory


def job_args(tmp_path, job_vars):
    """The Job's vars file and the -e arguments that name it, as jobs.job_command gives them: credentials_dir
    on the command line, everything else in the file (read by the playbook as data)."""
    job_vars = dict(job_vars)
    credentials_dir = job_vars.pop("credentials_dir", None)
    vars_file = tmp_path / ("vars-%d.json" % time.monotonic_ns())
    vars_file.write_text(json.dumps(job_vars))
    args = ["-e", "job_vars_file=%s" % vars_file]
    if credentials_dir:
        args += ["-e", "credentials_dir=%s" % credentials_dir]
    return args


def run_job_playbook(tmp_path, playbook, job_vars, timeout=120):
    """ansible-playbook <FQCN> -e job_vars_file=<vars.json> -e credentials_dir=<dir>."""
    return run_playbook(tmp_path, playbook, None, job_args(tmp_path, job_vars), timeout=timeout)


def runner(tmp_path, playbook, job_vars, timeout=120):
    """ansible-runner run <dir> -p <FQCN> --cmdline "-e job_vars_file=...", as the Job's container does."""
    private = tmp_path / "runner"
    private.mkdir(exist_ok=True)
    cmd = [str(VENV_BIN / "ansible-runner"), "run", str(private), "-p", playbook,
           "--cmdline", " ".join(job_args(tmp_path, job_vars)), "--ident", "job"]
    started = time.monotonic()
    proc = subprocess.run(cmd, env=ansible_env(tmp_path), capture_output=True, text=True, timeout=timeout)
    wall = time.monotonic() - started
    artifacts = private / "artifacts" / "job"
    return proc, wall, artifacts


def job_vars(tmp_path, sim, **kw):
    out = {"slot": "worker-01", "claim": "worker-01-7f4b9c", "attempt": 1, "group": "pool-a", "power_method": "ipmi",
           "ipmi": {"address": "127.0.0.1", "port": sim.port},
           "credentials_dir": str(credentials(tmp_path, sim.username, sim.password)), "power_timeout": 20}
    out.update(kw)
    return out


def test_startup_through_ansible_runner_with_fqcn(tmp_path, ipmi_sim):
    proc, wall, artifacts = runner(tmp_path, "homecluster.infra.startup", job_vars(tmp_path, ipmi_sim))
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert (artifacts / "status").read_text() == "successful" and (artifacts / "rc").read_text() == "0"
    assert ipmi_sim.power == "on"
    assert ipmi_sim.password not in proc.stdout and ipmi_sim.password not in (artifacts / "stdout").read_text()
    print("ansible-runner startup.yml against ipmi_sim: %.2f s wall" % wall)


class OsPort(dict):
    """{host, port} of a loopback TCP port that starts answering `after` seconds from now (a machine's OS
    coming up); `opened_at` (time.monotonic()) and `connections` say what the playbook saw."""

    opened_at: float | None = None
    connections: int = 0


@contextlib.contextmanager
def os_port(after: float = 0.0):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    check, stop = OsPort(host="127.0.0.1", port=port), threading.Event()

    def serve():
        if stop.wait(after):
            return
        with socket.socket() as srv:
            srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            srv.bind(("127.0.0.1", port))
            srv.listen(8)
            srv.settimeout(0.2)
            check.opened_at = time.monotonic()
            while not stop.is_set():
                with contextlib.suppress(OSError):
                    conn, _ = srv.accept()
                    check.connections += 1
                    conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield check
    finally:
        stop.set()
        thread.join(5)


def test_startup_waits_for_the_boot_check_port_after_the_power_on(tmp_path, ipmi_sim):
    with os_port(after=4.0) as check:
        proc, _, _ = runner(tmp_path, "homecluster.infra.startup",
                            job_vars(tmp_path, ipmi_sim, boot_check=dict(check), boot_timeout=60))
        ended = time.monotonic()
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert ipmi_sim.power == "on"
    assert check.connections >= 1 and check.opened_at is not None and ended > check.opened_at, proc.stdout[-3000:]


def test_startup_fails_when_the_machine_never_answers(tmp_path, ipmi_sim):
    with os_port(after=3600) as check:
        proc, _, artifacts = runner(tmp_path, "homecluster.infra.startup",
                                    job_vars(tmp_path, ipmi_sim, boot_check=dict(check), boot_timeout=3))
    assert proc.returncode != 0 and (artifacts / "status").read_text() == "failed"
    assert "did not answer on 127.0.0.1:%d" % check["port"] in proc.stdout, proc.stdout[-3000:]
    assert ipmi_sim.power == "on"  # powered on; the forced shutdown of a failed boot is the controller's


def test_the_boot_wait_gets_what_the_power_step_left_of_the_jobs_budget(tmp_path, ipmi_sim):
    """A startup Job passes boot_budget (its deadline less a margin): the wait is that budget less the power
    step's own time, not a fixed boot_timeout (here 60 s, which the budget replaces)."""
    with os_port(after=3600) as check:
        proc, _, artifacts = runner(tmp_path, "homecluster.infra.startup",
                                    job_vars(tmp_path, ipmi_sim, boot_check=dict(check), boot_timeout=60,
                                             boot_budget=3))
    assert proc.returncode != 0 and (artifacts / "status").read_text() == "failed"
    said = " ".join(proc.stdout.split())
    assert "left of the boot budget of 3 s" in said, proc.stdout[-3000:]
    waited = int(said.split("(the slot's spec.bootCheck) within ")[1].split(" s")[0])
    assert 1 <= waited <= 3, said[-2000:]  # 3 s less the (sub-second, rounded up) power step


def test_startup_fails_with_nonzero_exit_on_wrong_password(tmp_path, ipmi_sim):
    proc, _, artifacts = runner(tmp_path, "homecluster.infra.startup",
                                job_vars(tmp_path, ipmi_sim, credentials_dir=str(credentials(tmp_path, "admin", "nope-pw", name="wrong"))))
    assert proc.returncode != 0 and (artifacts / "status").read_text() == "failed"
    assert "bad credentials" in proc.stdout and "nope-pw" not in proc.stdout
    assert ipmi_sim.power == "off"


def test_shutdown_graceful_then_forced_and_forced_directly(tmp_path, ipmi_sim):
    ipmi_sim.power = "on"
    proc, _, artifacts = runner(tmp_path, "homecluster.infra.shutdown",
                                job_vars(tmp_path, ipmi_sim, graceful_timeout=1))
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "on -> off" in proc.stdout and "(forced)" in proc.stdout  # ipmi_sim ignores the soft-off
    assert ipmi_sim.power == "off"
    ipmi_sim.power = "on"
    proc, wall = run_job_playbook(tmp_path, "homecluster.infra.shutdown", job_vars(tmp_path, ipmi_sim, force=True,
                                                                                     graceful_timeout=60))
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "(forced)" in proc.stdout and ipmi_sim.power == "off"
    assert wall < 30, "force must not wait for the graceful timeout"


def test_redfish_startup_and_shutdown(tmp_path, redfish_emulator):
    common = {"power_method": "redfish", "power_timeout": 20, "credentials_dir": str(
        credentials(tmp_path, redfish_emulator.username, redfish_emulator.password)),
        "redfish": {"endpoint": redfish_emulator.endpoint, "system_id": redfish_emulator.system_id, "verify_tls": False,
                    "insecure": True}}
    with os_port() as check:
        proc, _ = run_job_playbook(tmp_path, "homecluster.infra.startup",
                                   dict(common, boot_check=dict(check), boot_timeout=30))
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert check.connections >= 1, proc.stdout[-3000:]
    assert redfish_emulator.power() == "On"
    proc, _ = run_job_playbook(tmp_path, "homecluster.infra.shutdown", dict(common, graceful_timeout=10))
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert redfish_emulator.power() == "Off" and "(forced)" not in proc.stdout


def test_wol_startup_and_ssh_shutdown(tmp_path, wol_listener, sshd_peer):
    ssh = sshd_peer.module_args()
    common = {"power_method": "wol", "power_timeout": 10,
              "credentials_dir": str(credentials(tmp_path, private_key=sshd_peer.key_file)),
              "wol": wol_listener.module_args(),
              "ssh": {k: ssh[k] for k in ("host", "port", "user", "command", "force_command")}}
    with os_port() as check:
        proc, _ = run_job_playbook(tmp_path, "homecluster.infra.startup",
                                   dict(common, boot_check=dict(check), boot_timeout=30))
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert check.connections >= 1, proc.stdout[-3000:]
    assert wol_listener.received == ["52:54:00:12:34:56"] and wol_listener.booted
    proc, _ = run_job_playbook(tmp_path, "homecluster.infra.shutdown", common)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert sshd_peer.poweroff_requests() == ["graceful"] and not sshd_peer.running


def test_power_playbook_against_an_inventory(tmp_path, ipmi_sim):
    creds = credentials(tmp_path, ipmi_sim.username, ipmi_sim.password)
    inventory = tmp_path / "machines.yml"
    inventory.write_text(json.dumps({"all": {"hosts": {
        "worker-01": {"power_method": "ipmi", "ipmi": {"address": "127.0.0.1", "port": ipmi_sim.port},
                      "credentials_dir": str(creds)},
        "worker-02": {"power_method": "ipmi", "ipmi": {"address": "127.0.0.1", "port": 9},
                      "credentials_dir": str(creds)},
    }}}))
    proc, _ = run_playbook(tmp_path, "homecluster.infra.power", {"slot": "worker-01", "state": "powered_on"},
                           ["-i", str(inventory)])
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "worker-01: off -> on" in proc.stdout and "worker-02" not in proc.stdout
    assert ipmi_sim.power == "on"
    proc, _ = run_playbook(tmp_path, "homecluster.infra.power", {"slot": "worker-01", "state": "query"},
                           ["-i", str(inventory)])
    assert proc.returncode == 0 and "worker-01: on -> on (no change" in proc.stdout


def test_ssh_shutdown_checks_the_host_key_when_the_slot_gives_known_hosts(tmp_path, sshd_peer):
    # Issue 15: without known_hosts any host key is accepted (a machine on the LAN could be impersonated and
    # receive the key's login). With the slot's known_hosts (ssh_known_hosts_file, as the Job passes it) a
    # key that does not match is refused and nothing is run; the right key powers the machine off.
    ssh = sshd_peer.module_args()
    job = {"power_method": "wol", "power_timeout": 10, "force": True,
           "credentials_dir": str(credentials(tmp_path, private_key=sshd_peer.key_file)),
           "ssh": {k: ssh[k] for k in ("host", "port", "user", "command", "force_command")}}
    entry = "[127.0.0.1]:%d " % sshd_peer.port
    wrong = tmp_path / "known_hosts.wrong"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "other")], check=True)
    wrong.write_text(entry + (tmp_path / "other.pub").read_text())
    proc, _ = run_playbook(tmp_path, "homecluster.infra.shutdown", None,
                           job_args(tmp_path, job) + ["-e", "ssh_known_hosts_file=%s" % wrong])
    assert proc.returncode != 0 and "host key" in proc.stdout, proc.stdout[-3000:]
    assert sshd_peer.poweroff_requests() == [] and sshd_peer.running
    right = tmp_path / "known_hosts"
    right.write_text(entry + (sshd_peer.dir / "host_key.pub").read_text())
    proc, _ = run_playbook(tmp_path, "homecluster.infra.shutdown", None,
                           job_args(tmp_path, job) + ["-e", "ssh_known_hosts_file=%s" % right])
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert sshd_peer.poweroff_requests() == ["forced"] and not sshd_peer.running
