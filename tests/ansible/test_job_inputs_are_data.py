"""A slot's fields are data in a lifecycle Job, never templates (issue 15 item 1).

The attack: whoever may write a slot puts `{{ lookup('pipe', ...) }}` in a field; the operator copies the
field into the Job's vars file. Here every string field of a slot (and the claim's and the Group's names) is
such a template, the Job is built by the real builder, and its playbook runs through ansible-runner with the
Job's own command line (only the two mounted paths localised, as the lab's executor does). Each template
would create a marker file named after its field; none may exist afterwards.
"""
from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from datetime import timedelta

import pytest

from hc_ansible import VENV_BIN, ansible_env
from homecluster.jobs import CREDENTIALS_DIR, JOB_VARS_ANNOTATION, JOB_VARS_FILE, shutdown_job, startup_job

pytestmark = pytest.mark.slow


@dataclass
class Settings:
    startup_job_timeout: timedelta = timedelta(seconds=60)
    shutdown_job_timeout: timedelta = timedelta(seconds=60)
    power_timeout: timedelta = timedelta(seconds=3)
    drain_timeout: timedelta = timedelta(seconds=2)
    graceful_timeout: timedelta = timedelta(seconds=1)


def template(markers, field):
    return "{{ lookup('ansible.builtin.pipe', 'touch %s/%s') }}" % (markers, field.replace(".", "_"))


def poison(value, markers, path=""):
    """Every string in value replaced by a template naming its path; spec.power.method (an enum) and the
    Secret's reference (a volume of the pod, not a var) left as they are."""
    if isinstance(value, dict) and path.endswith("credentialsSecretRef"):
        return value
    if isinstance(value, dict):
        return {k: poison(v, markers, f"{path}.{k}" if path else k) for k, v in value.items()}
    if isinstance(value, str) and not path.endswith("power.method"):
        return template(markers, path)
    return value


def slot_of(method):
    power = {"method": method}
    ref = {"name": "bmc", "namespace": ""}
    if method == "ipmi":
        power["ipmi"] = {"address": "127.0.0.1", "port": 9, "credentialsSecretRef": ref}
    elif method == "redfish":
        power["redfish"] = {"endpoint": "https://127.0.0.1:9", "systemId": "1", "verifyTLS": False,
                            "credentialsSecretRef": ref}
    else:
        power["wol"] = {"macAddress": "52:54:00:12:34:56", "broadcastAddress": "127.0.0.1", "port": 9}
        power["ssh"] = {"host": "127.0.0.1", "port": 9, "user": "root", "command": "poweroff",
                        "credentialsSecretRef": ref}
    return {"metadata": {"name": "worker-01", "uid": "slot-uid"},
            "spec": {"groupRef": "pool-a", "nodeName": "worker-01", "providerID": "k3s://worker-01",
                     "power": power}}


def string_leaves(value, path=""):
    if isinstance(value, dict):
        for k, v in value.items():
            yield from string_leaves(v, f"{path}.{k}" if path else k)
    elif isinstance(value, str):
        yield path, value


@pytest.mark.parametrize("method,kind", [("ipmi", "startup"), ("ipmi", "shutdown"), ("redfish", "startup"),
                                         ("redfish", "shutdown"), ("wol", "startup"), ("wol", "shutdown")])
def test_a_template_in_any_field_of_a_slot_stays_text_in_the_job(tmp_path, method, kind):
    markers = tmp_path / "markers"
    markers.mkdir()
    slot = poison(slot_of(method), markers)
    slot["metadata"]["uid"] = "slot-uid"
    claim = {"metadata": {"name": template(markers, "claim.name"), "uid": "claim-uid"}, "status": {"attempt": 1}}
    group = {"metadata": {"name": template(markers, "group.name")}}
    if kind == "startup":
        job = startup_job(claim, slot, group, Settings(), namespace="ns", image="runner:test")
    else:
        # the Node the operator observed for the slot (a shutdown names only such a Node), named as the slot says
        node = {"metadata": {"name": slot["spec"]["nodeName"]}, "spec": {"providerID": slot["spec"]["providerID"]}}
        job = shutdown_job(claim, slot, group, Settings(), force=False, namespace="ns", image="runner:test", node=node)
    pod = job["spec"]["template"]
    job_vars = json.loads(pod["metadata"]["annotations"][JOB_VARS_ANNOTATION])
    strings = dict(string_leaves(job_vars))
    # every string the Job receives is a template here, so none escapes the test (power_method is an enum)
    assert strings.pop("power_method") == method
    assert strings and all(v.startswith("{{ lookup(") for v in strings.values()), strings

    vars_file = tmp_path / "vars.json"
    vars_file.write_text(pod["metadata"]["annotations"][JOB_VARS_ANNOTATION])
    credentials = tmp_path / "credentials"
    credentials.mkdir()
    for name in ("username", "password", "privateKey"):
        (credentials / name).write_text("x\n")
    # every container of the pod, in order: a shutdown's cordon-drain init container reads the same file
    containers = (pod["spec"].get("initContainers") or []) + pod["spec"]["containers"]
    assert len(containers) == (2 if kind == "shutdown" else 1)
    output = ""
    for n, container in enumerate(containers):
        command = [a.replace(JOB_VARS_FILE, str(vars_file)).replace(CREDENTIALS_DIR, str(credentials))
                   for a in container["command"]]
        assert command[:2] == ["ansible-runner", "run"]
        private = tmp_path / f"runner-{n}"
        command = [str(VENV_BIN / "ansible-runner"), "run", str(private), *command[3:], "--ident", "job"]
        proc = subprocess.run(command, env=ansible_env(tmp_path), capture_output=True, text=True, timeout=150)
        output += proc.stdout + proc.stderr

    assert sorted(p.name for p in markers.iterdir()) == [], output[-4000:]
    # the playbook did read the values, as text: the log line shows the slot's and the claim's templates
    assert strings["slot"] in output and strings["claim"] in output, output[-4000:]
