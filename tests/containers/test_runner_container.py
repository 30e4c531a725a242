"""The runner image runs a lifecycle Job's container as the operator's Job manifest describes it
(homecluster.jobs.manifest): its command, user 1000, a read-only root filesystem, every capability dropped,
/runner and /tmp writable emptyDirs, the job vars and the BMC Secret as read-only files, host networking.
Inside, ansible-runner runs the collection's startup playbook against a simulated IPMI BMC on loopback, and
the machine powers on."""
from __future__ import annotations

import json
import os

import pytest

import runc_container as rc
from homecluster.jobs.extravars import CREDENTIALS_DIR
from homecluster.jobs.manifest import JOB_VARS_DIR, RUN_AS, RUNNER_DIR, STARTUP, job_command

NAME = "runner"
JOB_ENV = {"HOME": RUNNER_DIR, "ANSIBLE_NOCOLOR": "1"}  # the Job container's env (homecluster.jobs.manifest)


@pytest.fixture(autouse=True)
def _runnable():
    reason = rc.why_not_runnable(NAME)
    if reason:
        pytest.skip(reason)


def _owned_dir(path, mode):
    path.mkdir()
    os.chown(path, RUN_AS, RUN_AS)
    path.chmod(mode)
    return path


def _volumes(tmp_path, sim):
    """What the kubelet gives the Job's pod: the downwardAPI vars file (0444), the Secret's two keys (0440,
    group fsGroup), an empty /runner owned by fsGroup."""
    job_vars = tmp_path / "job-vars"
    job_vars.mkdir()
    (job_vars / "vars.json").write_text(json.dumps({
        "slot": "worker-01", "claim": "worker-01-7f4b9c", "attempt": 1, "group": "pool-a", "power_method": "ipmi",
        "ipmi": {"address": "127.0.0.1", "port": sim.port}, "power_timeout": 20}))
    (job_vars / "vars.json").chmod(0o444)
    credentials = tmp_path / "credentials"
    credentials.mkdir()
    for key, value in (("username", sim.username), ("password", sim.password + "\n")):
        (credentials / key).write_text(value)
        os.chown(credentials / key, 0, RUN_AS)
        (credentials / key).chmod(0o440)
    return job_vars, credentials, _owned_dir(tmp_path / "runner", 0o2770)


def test_startup_job_powers_the_machine_on_from_a_confined_container(tmp_path, ipmi_sim):
    job_vars, credentials, runner = _volumes(tmp_path, ipmi_sim)
    assert ipmi_sim.power == "off"
    config = rc.confined_config(
        NAME, job_command(STARTUP), uid=RUN_AS, gid=RUN_AS, cwd=RUNNER_DIR,
        env=JOB_ENV,
        tmpfs={"/tmp": RUN_AS}, writable={RUNNER_DIR: runner},
        binds={JOB_VARS_DIR: job_vars, CREDENTIALS_DIR: credentials})
    done = rc.run(config, tmp_path, timeout=180)
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-2000:])
    assert ipmi_sim.power == "on"
    (artifacts,) = (runner / "artifacts").iterdir()
    assert (artifacts / "status").read_text() == "successful", (artifacts / "stdout").read_text()[-3000:]
    assert ipmi_sim.password not in done.stdout + done.stderr + (artifacts / "stdout").read_text()


def test_every_job_reads_the_runner_ansible_config(tmp_path):
    # images/runner/ansible.cfg, copied to /etc/ansible/ansible.cfg and named by the image's ANSIBLE_CONFIG:
    # what ansible-playbook runs with in a Job's container, its env as the Job manifest gives it
    runner = _owned_dir(tmp_path / "runner", 0o2770)
    config = rc.confined_config(
        NAME, ["ansible-config", "dump", "--only-changed"], uid=RUN_AS, gid=RUN_AS, cwd=RUNNER_DIR,
        env=JOB_ENV, tmpfs={"/tmp": RUN_AS}, writable={RUNNER_DIR: runner})
    done = rc.run(config, tmp_path, timeout=120)
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-2000:])
    assert "CONFIG_FILE() = /etc/ansible/ansible.cfg" in done.stdout, done.stdout
    assert "DEFAULT_INTERNAL_POLL_INTERVAL(/etc/ansible/ansible.cfg) = 0.05" in done.stdout, done.stdout
