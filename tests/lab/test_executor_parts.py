"""The executor's parts that need no API server: paths, env, volumes, Pod and Job status, process kill."""
from __future__ import annotations

import asyncio
import base64
import json
import os
import stat
import sys
from pathlib import Path

import pytest

from homecluster_lab.executor import jobstatus, podbuild
from homecluster_lab.executor.envresolve import NotReady, container_env, expand, field_value, references
from homecluster_lab.executor.layout import plan_layout
from homecluster_lab.executor.process import ContainerProcess, alive, process_tree
from homecluster_lab.executor.volumes import materialise
from homecluster_lab.node import podstatus

POD = {
    "metadata": {"name": "j-abcde", "namespace": "ns", "uid": "pod-uid",
                 "labels": {"a": "1", "b": 'x"y'},
                 "annotations": {"infra.homecluster.dev/job-vars": '{"slot":"w1"}'}},
    "spec": {
        "nodeName": "lab", "serviceAccountName": "sa",
        "containers": [{
            "name": "c", "command": ["sh", "-c", "cat /etc/homecluster/job/vars.json"],
            "args": ["--dir=/runner/x", "@/etc/homecluster/job/vars.json", "/runnerx", "/etc/homecluster/credentials"],
            "volumeMounts": [
                {"name": "runner", "mountPath": "/runner"},
                {"name": "vars", "mountPath": "/etc/homecluster/job", "readOnly": True},
                {"name": "cred", "mountPath": "/etc/homecluster/credentials", "readOnly": True},
                {"name": "cm", "mountPath": "/etc/app/config.ini", "subPath": "config.ini"},
            ],
            "env": [
                {"name": "HOME", "value": "/runner"},
                {"name": "USERNAME", "valueFrom": {"secretKeyRef": {"name": "bmc", "key": "username"}}},
                {"name": "LEVEL", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "level"}}},
                {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                {"name": "VARS", "valueFrom": {"fieldRef": {
                    "fieldPath": "metadata.annotations['infra.homecluster.dev/job-vars']"}}},
                {"name": "GREETING", "value": "pod $(POD) at $(LEVEL), $$(POD) stays, $(NOPE) too"},
                {"name": "OPT", "valueFrom": {"secretKeyRef": {"name": "absent", "key": "k", "optional": True}}},
            ],
        }],
        "volumes": [
            {"name": "runner", "emptyDir": {}},
            {"name": "vars", "downwardAPI": {"items": [{"path": "vars.json", "fieldRef": {
                "fieldPath": "metadata.annotations['infra.homecluster.dev/job-vars']"}}]}},
            {"name": "cred", "secret": {"secretName": "bmc", "defaultMode": 0o440}},
            {"name": "cm", "configMap": {"name": "cm"}},
        ],
    },
}

OBJECTS = {
    ("secret", "bmc"): {"data": {"username": base64.b64encode(b"admin").decode(),
                                 "password": base64.b64encode(b"s3cret").decode()}},
    ("configmap", "cm"): {"data": {"level": "debug", "config.ini": "[a]\nb=1\n"}},
    ("secret", "absent"): None,
}


def test_references_lists_every_secret_and_configmap():
    assert references(POD["spec"]) == {("secret", "bmc"), ("configmap", "cm"), ("secret", "absent")}


def test_layout_rewrites_only_whole_mounted_prefixes(tmp_path):
    layout = plan_layout(tmp_path, POD["spec"], POD["spec"]["containers"][0])
    vols = tmp_path / "volumes"
    assert layout.substitute("cat /etc/homecluster/job/vars.json") == f"cat {vols}/vars/vars.json"
    assert layout.substitute("@/etc/homecluster/job/vars.json") == f"@{vols}/vars/vars.json"
    assert layout.substitute("--dir=/runner/x") == f"--dir={vols}/runner/x"
    assert layout.substitute("/runnerx") == "/runnerx"  # not a mounted path
    assert layout.substitute("/opt/runner") == "/opt/runner"  # not a prefix
    assert layout.substitute("/etc/homecluster/credentials") == f"{vols}/cred"
    assert layout.substitute("/etc/app/config.ini") == f"{vols}/cm/config.ini"  # subPath


def test_layout_substitutes_once_even_when_local_paths_look_mounted():
    # The pods' directory is under /tmp, which is itself a mount of lifecycle Jobs: a rewritten path
    # must not be rewritten a second time.
    spec = {"containers": [{"name": "c", "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"},
                                                           {"name": "vars", "mountPath": "/etc/job"}]}],
            "volumes": [{"name": "tmp", "emptyDir": {}}, {"name": "vars", "emptyDir": {}}]}
    root = Path("/tmp/pods/p1")
    layout = plan_layout(root, spec, spec["containers"][0])
    assert layout.substitute("cat /etc/job/v.json /tmp/x") == (
        "cat /tmp/pods/p1/volumes/vars/v.json /tmp/pods/p1/volumes/tmp/x")


def test_env_as_the_kubelet_computes_it():
    env = container_env(POD, POD["spec"]["containers"][0], OBJECTS)
    assert env["HOME"] == "/runner"
    assert env["USERNAME"] == "admin" and env["LEVEL"] == "debug" and env["POD"] == "j-abcde"
    assert json.loads(env["VARS"]) == {"slot": "w1"}
    assert env["GREETING"] == "pod j-abcde at debug, $(POD) stays, $(NOPE) too"
    assert "OPT" not in env


def test_missing_secret_is_a_config_error():
    objects = dict(OBJECTS)
    objects[("secret", "bmc")] = None
    with pytest.raises(NotReady) as err:
        container_env(POD, POD["spec"]["containers"][0], objects)
    assert err.value.reason == "CreateContainerConfigError" and 'secret "bmc" not found' in str(err.value)


def test_envfrom_and_missing_key():
    container = {"name": "c", "envFrom": [{"configMapRef": {"name": "cm"}, "prefix": "CM_"}],
                 "env": [{"name": "X", "valueFrom": {"secretKeyRef": {"name": "bmc", "key": "nokey"}}}]}
    with pytest.raises(NotReady, match="couldn't find key nokey in Secret ns/bmc"):
        container_env(POD, container, OBJECTS)
    container["env"] = []
    assert container_env(POD, container, OBJECTS) == {"CM_level": "debug", "CM_config.ini": "[a]\nb=1\n"}


def test_field_values_and_expand():
    assert field_value(POD, "metadata.labels") == 'a="1"\nb="x\\"y"'
    assert field_value(POD, "metadata.labels['a']") == "1"
    assert field_value(POD, "spec.nodeName") == "lab"
    with pytest.raises(NotReady):
        field_value(POD, "spec.nonsense")
    assert expand("$(A)-$(B)", {"A": "1"}) == "1-$(B)"


def test_materialise_volumes(tmp_path):
    layout = plan_layout(tmp_path, POD["spec"], POD["spec"]["containers"][0])
    materialise(layout, POD, OBJECTS)
    vols = tmp_path / "volumes"
    assert json.loads((vols / "vars" / "vars.json").read_text()) == {"slot": "w1"}
    assert (vols / "cred" / "password").read_bytes() == b"s3cret"
    assert stat.S_IMODE((vols / "cred" / "password").stat().st_mode) == 0o440
    assert (vols / "cm" / "config.ini").read_text() == "[a]\nb=1\n"
    assert (vols / "runner").is_dir()


def test_materialise_missing_secret_volume_waits(tmp_path):
    objects = dict(OBJECTS)
    objects[("secret", "bmc")] = None
    layout = plan_layout(tmp_path, POD["spec"], POD["spec"]["containers"][0])
    with pytest.raises(NotReady, match='secret "bmc" not found') as err:
        materialise(layout, POD, objects)
    assert err.value.reason == "ContainerCreating" and err.value.event == "FailedMount"
    assert 'MountVolume.SetUp failed for volume "' in str(err.value)


def test_pod_for_job_labels_and_owner():
    job = {"metadata": {"name": "w1-startup", "namespace": "ns", "uid": "job-uid"},
           "spec": {"template": {"metadata": {"labels": {"x": "y"}, "annotations": {"k": "v"}},
                                 "spec": {"containers": [{"name": "c", "image": "i"}]}}}}
    pod = podbuild.pod_for_job(job, podbuild.pod_name("w1-startup", "abcde"), "lab")
    assert pod["metadata"]["name"] == "w1-startup-abcde"
    assert pod["metadata"]["labels"] == {"x": "y", "batch.kubernetes.io/job-name": "w1-startup",
                                         "job-name": "w1-startup", "batch.kubernetes.io/controller-uid": "job-uid",
                                         "controller-uid": "job-uid"}
    assert pod["metadata"]["annotations"] == {"k": "v"}
    assert pod["metadata"]["ownerReferences"][0] == {"apiVersion": "batch/v1", "kind": "Job", "name": "w1-startup",
                                                     "uid": "job-uid", "controller": True,
                                                     "blockOwnerDeletion": True}
    assert pod["spec"]["nodeName"] == "lab" and pod["status"] == {"phase": "Pending"}
    assert len(podbuild.pod_name("x" * 80, "abcde")) == 64
    done = podstatus.status_terminated(pod, "t0", "t1", 2, "boom")
    assert done["phase"] == "Failed"
    assert done["containerStatuses"][0]["state"]["terminated"] == {
        "exitCode": 2, "reason": "Error", "startedAt": "t0", "finishedAt": "t1", "message": "boom"}
    assert podstatus.status_terminated(pod, "t0", "t1", 0)["phase"] == "Succeeded"


def test_job_status_shapes():
    ok = jobstatus.succeeded(1, "T")
    assert [c["type"] for c in ok["conditions"]] == ["SuccessCriteriaMet", "Complete"]
    assert ok["succeeded"] == 1 and ok["completionTime"] == "T" and ok["active"] == 0
    bad = jobstatus.failed(2, "T", jobstatus.DEADLINE)
    assert [(c["type"], c["reason"]) for c in bad["conditions"]] == [("FailureTarget", "DeadlineExceeded"),
                                                                     ("Failed", "DeadlineExceeded")]
    assert jobstatus.is_finished({"status": bad}) and not jobstatus.is_finished({"status": {}})
    assert jobstatus.finished_at({"status": bad}) == "T"
    assert jobstatus.backoff_limit({"spec": {}}) == 6 and jobstatus.backoff_limit({"spec": {"backoffLimit": 0}}) == 0


async def test_kill_reaches_a_grandchild_in_its_own_session(tmp_path):
    # ansible-runner runs ansible-playbook under a pty in a session of its own: a process group kill
    # would miss it. The grandchild here does the same (setsid) and ignores SIGTERM.
    pidfile = tmp_path / "grandchild.pid"
    script = (f"import os, subprocess, sys, time\n"
              f"p = subprocess.Popen(['setsid', sys.executable, '-c', "
              f"'import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)'])\n"
              f"open({str(pidfile)!r}, 'w').write(str(p.pid))\n"
              f"time.sleep(60)\n")
    proc = await ContainerProcess.start([sys.executable, "-c", script], dict(os.environ), tmp_path,
                                        tmp_path / "log")
    for _ in range(200):
        if pidfile.exists() and pidfile.read_text():
            break
        await asyncio.sleep(0.02)
    grandchild = int(pidfile.read_text())
    assert grandchild in process_tree(proc.pid)
    await proc.kill(grace=0.3)
    await asyncio.sleep(0.1)
    assert not alive(proc.pid)
    # reaped by init or a zombie of init: either way, not running
    state = Path(f"/proc/{grandchild}/stat").read_text().split(")")[-1].split()[0] if alive(grandchild) else "gone"
    assert state in ("gone", "Z")


async def test_exit_code_and_tail(tmp_path):
    proc = await ContainerProcess.start(["sh", "-c", "for i in 1 2 3 4 5; do echo line$i; done; exit 3"],
                                        {"PATH": os.environ["PATH"]}, tmp_path, tmp_path / "log")
    assert await proc.wait() == 3
    assert proc.tail(2) == "line4\nline5"
