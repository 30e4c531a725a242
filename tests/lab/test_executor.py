"""The Job executor against the lab API server: real Jobs, real Pods, real local processes."""
from __future__ import annotations

import asyncio
import base64
import json
import time
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from homecluster.jobs import shutdown_job, startup_job
from homecluster.jobs.extravars import expected_provider_id
from homecluster_lab.executor import ExecutorConfig, JobExecutor
from homecluster_lab.executor.process import alive
from homecluster_lab.node.kube import Kube, KubeError, core_path, job_path, pod_path
from load_factor import scaled
from support.waits import until

pytestmark = pytest.mark.lab
NS = "executor-test"
REPO_PLAYBOOKS = Path(__file__).resolve().parents[2] / "playbooks"

# Real-time upper bounds tell an honoured limit from an ignored one, not speed: the suite shares 2 cores
# with another worker, and a step that takes 0.3 s alone can take several seconds there. Each
# bound adds it stretched by the machine's measured load (load_factor.scaled).
LOAD_SLACK = 8.0


@pytest.fixture
def api(lab_api):
    """The lab API server (tests/lab/conftest.py)."""
    return lab_api


@pytest.fixture
async def kube(api):
    async with Kube(str(api.kubeconfig_path)) as k:
        try:
            await k.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                  "metadata": {"name": NS}})
        except KubeError as exc:
            if exc.status != 409:
                raise
        await k.create(core_path("secrets", NS, "")[:-1], {
            "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "worker-01-bmc", "namespace": NS},
            "data": {"username": base64.b64encode(b"admin").decode(),
                     "password": base64.b64encode(b"hunter2").decode()}})
        yield k


@pytest.fixture
async def executor(api, kube, tmp_path):
    cfg = ExecutorConfig(kubeconfig_path=api.kubeconfig_path, workdir=tmp_path / "pods", namespace=NS,
                         retry_delay=0.1, kill_grace=0.5)
    async with JobExecutor(cfg) as ex:
        yield ex


@dataclass
class Settings:
    # the Jobs' activeDeadlineSeconds: a bound on a hung playbook, not a speed target (a real shutdown
    # playbook, normally about 10 s here, passed 30 s on a machine with every core busy elsewhere)
    startup_job_timeout: timedelta = timedelta(seconds=90)
    shutdown_job_timeout: timedelta = timedelta(seconds=90)


SLOT = {"metadata": {"name": "worker-01", "uid": "slot-uid"},
        "spec": {"groupRef": "pool-a", "power": {"method": "ipmi", "ipmi": {
            "address": "127.0.0.1", "port": 6230, "credentialsSecretRef": {"name": "worker-01-bmc"}}}}}


def observed_node(slot: dict[str, Any]) -> dict[str, Any]:
    """The corev1 Node the operator observed and accepted for the slot when it built a shutdown Job (a graceful
    shutdown is only fired for a machine whose Node is observed up): a shutdown names only such a Node."""
    return {"metadata": {"name": slot["spec"].get("nodeName") or slot["metadata"]["name"]},
            "spec": {"providerID": expected_provider_id(slot)}}


def lifecycle_job(name: str, script: str, **spec: Any) -> dict[str, Any]:
    """A real startup Job from the builder, with the test's shell script as its command."""
    claim = {"metadata": {"name": name, "uid": f"{name}-uid"}, "spec": {"slotRef": "worker-01"},
             "status": {"attempt": 1}}
    job = startup_job(claim, SLOT, None, Settings(), namespace=NS, image="runner:test")
    # no NodeClaim exists in this API server: an owner that is missing would let a GC collect the Job
    del job["metadata"]["ownerReferences"]
    job["spec"]["template"]["spec"]["containers"][0]["command"] = ["sh", "-c", script]
    job["spec"].update(spec)
    return job


async def wait_for(fetch, check, timeout: float = 15.0, what: str = "condition"):
    """What `fetch()` returns once `check` holds for it (an API error counts as not yet): support.waits.until
    over the fetch, naming the last thing seen at the give-up."""
    last: list[Any] = [None]

    async def seen() -> tuple[Any] | None:
        try:
            last[0] = await fetch()
        except KubeError as exc:
            last[0] = exc
            return None
        return (last[0],) if check(last[0]) else None  # a tuple: what was seen may itself be false ([])

    [found] = await until(seen, what, timeout, interval=0.05, detail=lambda: f"last seen: {last[0]!r}"[:2000])
    return found


def conditions(job: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    return [(c["type"], c["status"], c.get("reason")) for c in (job.get("status") or {}).get("conditions") or []]


def _completed_at(job: dict[str, Any]) -> float:
    from datetime import datetime
    return datetime.fromisoformat(job["status"]["completionTime"].replace("Z", "+00:00")).timestamp()


def finished(job: dict[str, Any]) -> bool:
    return any(t in ("Complete", "Failed") and s == "True" for t, s, _ in conditions(job))


async def pods_of(kube: Kube, job_name: str) -> list[dict[str, Any]]:
    items = (await kube.get(pod_path(NS)))["items"]
    return [p for p in items if p["metadata"].get("labels", {}).get("batch.kubernetes.io/job-name") == job_name]


async def read_pid(executor: JobExecutor, kube: Kube, job_name: str) -> int:
    async def fetch():
        return await pods_of(kube, job_name)

    pods = await wait_for(fetch, lambda ps: any(
        (executor.workdir / NS / p["metadata"]["name"] / "volumes" / "runner" / "pid").exists() for p in ps),
        what="the container to write its pid")
    for p in pods:
        f = executor.workdir / NS / p["metadata"]["name"] / "volumes" / "runner" / "pid"
        if f.exists() and f.read_text().strip():
            return int(f.read_text())
    raise AssertionError("no pid")


async def test_job_succeeds_with_vars_and_credentials(executor, kube):
    script = ("cat /etc/homecluster/job/vars.json; test -f /etc/homecluster/credentials/password && "
              "cp /etc/homecluster/credentials/password $HOME/seen")
    await kube.create(job_path(NS), lifecycle_job("c1", script))
    job = await wait_for(lambda: kube.get(job_path(NS, "c1-startup")), finished, what="the Job to finish")
    [pod] = await pods_of(kube, "c1-startup")
    assert conditions(job) == [("SuccessCriteriaMet", "True", "CompletionsReached"),
                               ("Complete", "True", "CompletionsReached")], json.dumps(pod["status"])
    status = job["status"]
    assert status["succeeded"] == 1 and status["active"] == 0 and status.get("failed", 0) == 0
    assert status["startTime"] <= status["completionTime"]
    assert pod["status"]["phase"] == "Succeeded"
    assert pod["metadata"]["ownerReferences"][0]["kind"] == "Job"
    assert pod["metadata"]["labels"]["infra.homecluster.dev/slot"] == "worker-01"
    terminated = pod["status"]["containerStatuses"][0]["state"]["terminated"]
    assert terminated["exitCode"] == 0 and terminated["reason"] == "Completed"
    pod_dir = executor.workdir / NS / pod["metadata"]["name"]
    output = (pod_dir / "container.log").read_text()
    assert json.loads(output.strip().splitlines()[0])["slot"] == "worker-01"
    # HOME is /runner (an emptyDir) in the Job; the Secret's file was readable at its mount path
    assert (pod_dir / "volumes" / "runner" / "seen").read_text() == "hunter2"


async def test_pods_run_at_the_configured_pod_nice(executor, kube):
    """Pods yield the CPU to the lab's API server and operator (priority.py): nice and autogroup both.
    The executor lowers a pod's process right after it starts (no preexec_fn: the lab has threads), so
    the first milliseconds run unlowered; the script looks after that."""
    script = "sleep 0.5; nice; test -r /proc/self/autogroup && cat /proc/self/autogroup || echo 'no autogroups'"
    await kube.create(job_path(NS), lifecycle_job("c9", script))
    await wait_for(lambda: kube.get(job_path(NS, "c9-startup")), finished, what="the Job to finish")
    [pod] = await pods_of(kube, "c9-startup")
    lines = (executor.workdir / NS / pod["metadata"]["name"] / "container.log").read_text().split("\n")
    assert executor.cfg.pod_nice == 10 and lines[0] == "10"
    assert lines[1] == "no autogroups" or lines[1].endswith(" nice 10"), lines


async def test_failing_command_exhausts_backoff_limit(executor, kube):
    await kube.create(job_path(NS), lifecycle_job("c2", "echo first; echo 'the BMC said no' >&2; exit 4",
                                                  backoffLimit=1))
    job = await wait_for(lambda: kube.get(job_path(NS, "c2-startup")), finished, what="the Job to fail")
    assert conditions(job) == [("FailureTarget", "True", "BackoffLimitExceeded"),
                               ("Failed", "True", "BackoffLimitExceeded")]
    assert job["status"]["failed"] == 2 and job["status"]["active"] == 0
    assert "completionTime" not in job["status"]
    pods = await pods_of(kube, "c2-startup")
    assert len(pods) == 2 and all(p["status"]["phase"] == "Failed" for p in pods)
    term = pods[0]["status"]["containerStatuses"][0]["state"]["terminated"]
    assert term["exitCode"] == 4 and term["reason"] == "Error"
    assert term["message"] == "first\nthe BMC said no"  # FallbackToLogsOnError


async def test_active_deadline_kills_the_process(executor, kube):
    await kube.create(job_path(NS), lifecycle_job("c3", "echo $$$$ > /runner/pid; exec sleep 30",
                                                  activeDeadlineSeconds=1))
    pid = await read_pid(executor, kube, "c3-startup")
    started = time.monotonic()
    job = await wait_for(lambda: kube.get(job_path(NS, "c3-startup")), finished, what="the deadline")
    assert time.monotonic() - started < 1 + scaled(LOAD_SLACK)  # the process sleeps 30 s
    assert conditions(job) == [("FailureTarget", "True", "DeadlineExceeded"), ("Failed", "True", "DeadlineExceeded")]
    assert job["status"]["failed"] == 1 and job["status"]["active"] == 0
    assert not alive(pid)
    assert await pods_of(kube, "c3-startup") == []  # the Job controller deletes a timed-out Job's pods


async def test_deleting_the_job_kills_the_process(executor, kube):
    await kube.create(job_path(NS), lifecycle_job("c4", "echo $$$$ > /runner/pid; exec sleep 30"))
    pid = await read_pid(executor, kube, "c4-startup")
    assert alive(pid)
    # while it runs: the Pod is Running and ready, the Job counts one active, ready pod. The process can write
    # its pid before the kubelet's status write lands (a loaded run read Pending here), so wait for that status.
    def running_and_ready(pods):
        status = (pods[0].get("status") or {}) if len(pods) == 1 else {}
        ready = {c["type"]: c["status"] for c in status.get("conditions") or []}.get("Ready")
        return status.get("phase") == "Running" and ready == "True"

    [pod] = await wait_for(lambda: pods_of(kube, "c4-startup"), running_and_ready, what="the Pod to be Running and ready")
    assert pod["status"]["containerStatuses"][0]["state"]["running"]["startedAt"]
    job = await wait_for(lambda: kube.get(job_path(NS, "c4-startup")),
                         lambda j: (j.get("status") or {}).get("ready") == 1, what="the Job to count a ready pod")
    assert job["status"]["active"] == 1 and job["status"]["startTime"]
    assert not finished(job)
    await kube.delete(job_path(NS, "c4-startup"), propagation="Background")
    end = time.monotonic() + 15  # a wait: kill grace is 2 s, the rest is for a loaded machine
    while alive(pid) and time.monotonic() < end:
        await asyncio.sleep(0.05)
    assert not alive(pid)
    await wait_for(lambda: pods_of(kube, "c4-startup"), lambda ps: ps == [], what="the pod to be collected")


async def test_deleting_the_pod_kills_it_and_the_job_replaces_it(executor, kube, tmp_path):
    # The marker lives on a hostPath volume, so the replacement pod sees what the first one left.
    job = lifecycle_job(
        "c5", "if [ -f /shared/marker ]; then exit 0; fi; : > /shared/marker; echo $$$$ > /runner/pid; exec sleep 30",
        backoffLimit=1)
    pod_spec = job["spec"]["template"]["spec"]
    pod_spec["volumes"].append({"name": "shared", "hostPath": {"path": str(tmp_path)}})
    pod_spec["containers"][0]["volumeMounts"].append({"name": "shared", "mountPath": "/shared"})
    await kube.create(job_path(NS), job)
    pid = await read_pid(executor, kube, "c5-startup")
    [pod] = await pods_of(kube, "c5-startup")
    await kube.delete(pod_path(NS, pod["metadata"]["name"]))
    job = await wait_for(lambda: kube.get(job_path(NS, "c5-startup")), finished, what="the Job to finish")
    assert not alive(pid)
    assert conditions(job)[-1] == ("Complete", "True", "CompletionsReached")
    assert job["status"]["failed"] == 1 and job["status"]["succeeded"] == 1
    [replacement] = await pods_of(kube, "c5-startup")
    assert replacement["metadata"]["name"] != pod["metadata"]["name"]


async def test_ttl_after_finished_deletes_the_job(executor, kube):
    # a TTL long enough that a loaded machine's poll sees the finished Job before it is collected
    await kube.create(job_path(NS), lifecycle_job("c6", "true", ttlSecondsAfterFinished=3))
    done = await wait_for(lambda: kube.get(job_path(NS, "c6-startup")), finished, what="the Job to finish")

    async def gone():
        try:
            await kube.get(job_path(NS, "c6-startup"))
            return False
        except KubeError as exc:
            return exc.status == 404

    await wait_for(gone, bool, timeout=10, what="the TTL to delete the Job")
    assert (time.time() - _completed_at(done)) >= 2.5, "collected before its ttlSecondsAfterFinished"


async def test_missing_secret_keeps_the_pod_pending(executor, kube):
    job = lifecycle_job("c7", "true", activeDeadlineSeconds=1)
    job["spec"]["template"]["spec"]["volumes"][-1]["secret"]["secretName"] = "nope"
    await kube.create(job_path(NS), job)

    async def fetch():
        return await pods_of(kube, "c7-startup")

    pods = await wait_for(fetch, lambda ps: ps and ps[0]["status"].get("containerStatuses"), what="pod status")
    waiting = pods[0]["status"]["containerStatuses"][0]["state"]["waiting"]
    assert pods[0]["status"]["phase"] == "Pending" and waiting["reason"] == "ContainerCreating"
    assert not waiting.get("message")  # as a real kubelet: the why is a FailedMount Event on the pod
    pod_name = pods[0]["metadata"]["name"]

    async def events():
        return (await kube.get(f"/api/v1/namespaces/{NS}/events"))["items"]

    def of_pod(items):
        return [e for e in items if e["involvedObject"]["name"] == pod_name]

    (event,) = of_pod(await wait_for(events, of_pod, what="the FailedMount Event"))
    assert (event["type"], event["reason"]) == ("Warning", "FailedMount")
    assert 'MountVolume.SetUp failed for volume "' in event["message"]
    assert 'secret "nope" not found' in event["message"]
    job = await wait_for(lambda: kube.get(job_path(NS, "c7-startup")), finished, what="the deadline")
    assert conditions(job)[-1] == ("Failed", "True", "DeadlineExceeded")


async def test_a_slot_naming_a_certificate_secret_gets_no_key_of_it(executor, kube):
    # Issue 15: a slot may name any Secret of the Jobs' namespace, a certificate's included. The Job
    # projects only the keys its step reads (username, password), so the pod does not start and tls.key
    # never reaches its filesystem or its log.
    await kube.create(core_path("secrets", NS, "")[:-1], {
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "homecluster-ca", "namespace": NS},
        "type": "kubernetes.io/tls",
        "data": {"tls.crt": base64.b64encode(b"CERT").decode(), "tls.key": base64.b64encode(b"CA-PRIVATE-KEY").decode()}})
    slot = json.loads(json.dumps(SLOT))
    slot["spec"]["power"]["ipmi"]["credentialsSecretRef"]["name"] = "homecluster-ca"
    claim = {"metadata": {"name": "c11", "uid": "c11-uid"}, "spec": {"slotRef": "worker-01"}, "status": {"attempt": 1}}
    job = startup_job(claim, slot, None, Settings(), namespace=NS, image="runner:test")
    del job["metadata"]["ownerReferences"]
    job["spec"]["template"]["spec"]["containers"][0]["command"] = [
        "sh", "-c", "ls /etc/homecluster/credentials; cat /etc/homecluster/credentials/tls.key"]
    job["spec"]["activeDeadlineSeconds"] = 2
    await kube.create(job_path(NS), job)
    pods = await wait_for(lambda: pods_of(kube, "c11-startup"),
                          lambda ps: ps and ps[0]["status"].get("containerStatuses"), what="pod status")
    waiting = pods[0]["status"]["containerStatuses"][0]["state"].get("waiting") or {}
    assert waiting.get("reason") == "ContainerCreating", pods[0]["status"]
    pod_name = pods[0]["metadata"]["name"]

    async def events():
        return [e for e in (await kube.get(f"/api/v1/namespaces/{NS}/events"))["items"]
                if e["involvedObject"]["name"] == pod_name]

    # as a real kubelet: the why is a FailedMount Event on the pod, not a message on the container
    event = (await wait_for(events, bool, what="the FailedMount Event"))[0]
    assert (event["type"], event["reason"]) == ("Warning", "FailedMount")
    assert 'key "username" not in secret "homecluster-ca"' in event["message"], event
    job = await wait_for(lambda: kube.get(job_path(NS, "c11-startup")), finished, what="the deadline")
    assert conditions(job)[-1] == ("Failed", "True", "DeadlineExceeded")
    pod_dir = executor.log_file(NS, pods[0]["metadata"]["name"]).parent
    assert not [p for p in pod_dir.rglob("*") if p.is_file() and b"CA-PRIVATE-KEY" in p.read_bytes()]


async def test_a_shutdown_holds_its_token_only_in_the_cordon_and_drain_step(executor, kube):
    # Issue 15: the power step parses the BMC's replies; it runs without a Kubernetes token. The builder's
    # shutdown Job, its two commands replaced by probes of what each container can reach.
    job = shutdown_job(None, SLOT, None, Settings(), force=False, namespace=NS, image="runner:test",
                       node=observed_node(SLOT))
    del job["metadata"]["ownerReferences"]
    spec = job["spec"]["template"]["spec"]
    probe = ("echo {0} KUBECONFIG=${{KUBECONFIG:-none}}; "
             "cat /var/run/secrets/kubernetes.io/serviceaccount/token >/dev/null 2>&1 && echo {0} token || "
             "echo {0} no-token; test -f /etc/homecluster/credentials/password && echo {0} creds || echo {0} no-creds")
    spec["initContainers"][0]["command"] = ["sh", "-c", probe.format("INIT")]
    spec["containers"][0]["command"] = ["sh", "-c", probe.format("MAIN")]
    await kube.create(job_path(NS), job)
    name = job["metadata"]["name"]
    done = await wait_for(lambda: kube.get(job_path(NS, name)), finished, timeout=60, what="the Job")
    [pod] = await pods_of(kube, name)
    output = executor.log_file(NS, pod["metadata"]["name"]).read_text()
    assert conditions(done)[-1] == ("Complete", "True", "CompletionsReached"), output
    lines = output.splitlines()
    assert "INIT token" in lines and "INIT no-creds" in lines and "INIT KUBECONFIG=none" not in lines, output
    assert "MAIN KUBECONFIG=none" in lines and "MAIN no-token" in lines and "MAIN creds" in lines, output
    assert output.index("INIT token") < output.index("MAIN no-token")  # the init container ran first


async def test_real_ansible_runner_reads_the_vars(api, kube, tmp_path):
    # The contract's own command, unchanged but for the playbook: ansible-runner from the virtualenv,
    # -e job_vars_file=/etc/homecluster/job/vars.json localised by the executor, HOME on the /runner emptyDir;
    # ansible-playbook reads the runner image's configuration (images/runner/ansible.cfg), as in the image.
    playbook = tmp_path / "show.yml"
    playbook.write_text("- hosts: localhost\n  gather_facts: false\n  tasks:\n"
                        "    - ansible.builtin.debug:\n        msg: 'slot={{ job.slot }} ipmi_port={{ job.ipmi.port }}'\n"
                        "      vars:\n        job: \"{{ lookup('file', job_vars_file) | from_json }}\"\n"
                        "    - ansible.builtin.debug:\n"
                        "        msg: \"poll={{ lookup('ansible.builtin.config', 'DEFAULT_INTERNAL_POLL_INTERVAL') }}\"\n"
                        "    - ansible.builtin.assert:\n        that: lookup('ansible.builtin.file', "
                        "credentials_dir ~ '/password') == 'hunter2'\n      no_log: true\n")

    def rewrite(argv, run):
        return [str(playbook) if a == "homecluster.infra.startup" else a for a in argv]

    cfg = ExecutorConfig(kubeconfig_path=api.kubeconfig_path, workdir=tmp_path / "pods", namespace=NS,
                         command_rewrite=rewrite)
    claim = {"metadata": {"name": "c8", "uid": "c8-uid"}, "spec": {"slotRef": "worker-01"}, "status": {"attempt": 1}}
    job = startup_job(claim, SLOT, None, Settings(), namespace=NS, image="runner:test")
    del job["metadata"]["ownerReferences"]
    async with JobExecutor(cfg) as ex:
        await kube.create(job_path(NS), job)
        done = await wait_for(lambda: kube.get(job_path(NS, "c8-startup")), finished, timeout=30,
                              what="ansible-runner")
        [pod] = await pods_of(kube, "c8-startup")
        output = ex.log_file(NS, pod["metadata"]["name"]).read_text()
    assert conditions(done)[-1] == ("Complete", "True", "CompletionsReached"), output
    assert "slot=worker-01 ipmi_port=6230" in output
    assert "poll=0.05" in output, output  # ansible-core's own default is 0.001
    assert "hunter2" not in output


@pytest.fixture
def collections(tmp_path):
    """A collections path where homecluster.infra is this working tree (what `make collection` makes)."""
    link = tmp_path / "collections" / "ansible_collections" / "homecluster" / "infra"
    link.parent.mkdir(parents=True)
    link.symlink_to(REPO_PLAYBOOKS.parent, target_is_directory=True)
    return tmp_path / "collections"


@pytest.fixture
async def machine():
    """A simulated machine behind a real IPMI BMC on loopback (user admin, password hunter2), whose OS answers
    on its boot check port (the slot's spec.bootCheck) once up."""
    from homecluster_lab.machines.boot import Timing
    from homecluster_lab.machines.bootport import BootPort
    from homecluster_lab.machines.ipmi import IpmiServer
    from homecluster_lab.machines.machine import Credentials, Identity, SimMachine

    server = IpmiServer()
    m = SimMachine(Identity("worker-01", "worker-01", "52:54:00:00:00:21", "worker-01", "k3s://worker-01"),
                   timing=Timing(graceful_shutdown_seconds=0.2), credentials=Credentials("admin", "hunter2"))
    bmc = server.add(m)
    port = BootPort(m)
    await port.start()
    slot = json.loads(json.dumps(SLOT))
    slot["spec"]["power"]["ipmi"]["port"] = bmc.port
    slot["spec"]["bootCheck"] = {"host": port.host, "port": port.port}
    yield m, slot
    await port.close()
    server.close()


async def run_real(api, kube, tmp_path, collections, job, name):
    """Run one Job, unchanged, through the executor; return (the finished Job, the container output)."""
    del job["metadata"]["ownerReferences"]
    cfg = ExecutorConfig(kubeconfig_path=api.kubeconfig_path, workdir=tmp_path / "pods", namespace=NS,
                         collections_path=collections)
    async with JobExecutor(cfg) as ex:
        await kube.create(job_path(NS), job)
        done = await wait_for(lambda: kube.get(job_path(NS, name)), finished, timeout=120, what=f"Job {name}")
        [pod] = await pods_of(kube, name)
        return done, ex.log_file(NS, pod["metadata"]["name"]).read_text()


needs_playbooks = pytest.mark.skipif(not (REPO_PLAYBOOKS / "shutdown.yml").exists(),
                                     reason="the collection's playbooks are not written yet")


@needs_playbooks
@pytest.mark.slow
async def test_real_startup_job_powers_a_simulated_machine_on(api, kube, tmp_path, collections, machine):
    # End to end with nothing rewritten: the builder's Job, ansible-runner from the virtualenv, the
    # collection's startup playbook from the working tree, the Secret's files, a simulated IPMI BMC.
    sim, slot = machine
    claim = {"metadata": {"name": "c9", "uid": "c9-uid"}, "spec": {"slotRef": "worker-01"}, "status": {"attempt": 1}}
    job = startup_job(claim, slot, None, Settings(), namespace=NS, image="runner:test")
    done, output = await run_real(api, kube, tmp_path, collections, job, "c9-startup")
    assert conditions(done)[-1] == ("Complete", "True", "CompletionsReached"), output[-3000:]
    assert sim.power_state() == "on"
    assert sim.view().os_up  # the Job ended once the machine answered on its boot check port, not at "power on"
    assert "hunter2" not in output


@needs_playbooks
@pytest.mark.slow
async def test_real_startup_job_keeps_a_template_in_the_slot_as_text(api, kube, tmp_path, collections, machine):
    # Issue 15's attack through the real path (builder, executor, ansible-runner, startup playbook): an
    # address that, rendered, runs a command and still names the BMC. Rendered, the machine would boot and
    # the marker exist; as data it is a host name that does not resolve, and the Job fails.
    sim, slot = machine
    marker = tmp_path / "marker"
    slot["spec"]["power"]["ipmi"]["address"] = "{{ lookup('pipe', 'touch %s; echo 127.0.0.1') }}" % marker
    claim = {"metadata": {"name": "c10", "uid": "c10-uid"}, "spec": {"slotRef": "worker-01"}, "status": {"attempt": 1}}
    job = startup_job(claim, slot, None, Settings(), namespace=NS, image="runner:test")
    done, output = await run_real(api, kube, tmp_path, collections, job, "c10-startup")
    assert not marker.exists(), output[-3000:]
    assert conditions(done)[-1][0] == "Failed", output[-3000:]
    assert sim.power_state() == "off"


@needs_playbooks
@pytest.mark.slow
async def test_real_shutdown_job_cordons_through_the_lab_kubeconfig(api, kube, tmp_path, collections, machine):
    # A shutdown mounts its service-account token; in the lab that means KUBECONFIG points at the lab's
    # API server, so the playbook's cordon reaches the corev1 Node.
    sim, slot = machine
    sim.power_on(source="test")
    assert sim.power_state() == "on"
    # spec: {} as a real API server would return it (the lab's server keeps an omitted spec omitted)
    await kube.create("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "worker-01"},
                                        "spec": {"providerID": "homecluster://worker-01"}})
    job = shutdown_job(None, slot, None, Settings(), force=False, namespace=NS, image="runner:test",
                       node=observed_node(slot))
    done, output = await run_real(api, kube, tmp_path, collections, job, job["metadata"]["name"])
    assert conditions(done)[-1] == ("Complete", "True", "CompletionsReached"), output[-3000:]
    node = await kube.get("/api/v1/nodes/worker-01")
    assert node["spec"].get("unschedulable") is True, output[-3000:]
    assert "did not finish" not in output  # the cordon and the drain succeeded
    assert sim.power_state() == "off"
    assert "hunter2" not in output


@needs_playbooks
@pytest.mark.slow
async def test_real_shutdown_job_leaves_a_node_of_another_machine_alone(api, kube, tmp_path, collections, machine):
    # Issue 15: a slot whose nodeName names another machine's Node (the control plane's) must not get it
    # cordoned and drained by its shutdown Job, whose token could. The operator names no Node it did not
    # accept (tests/lifecycle/boundary/test_slot_boundary.py); here the Node it observed under that name carried the
    # slot's providerID and changed before the Job ran: the Job passes the slot's providerID and the modules
    # refuse a Node that does not carry it. The machine is still powered off.
    sim, slot = machine
    sim.power_on(source="test")
    slot["spec"]["nodeName"] = "cp-1"
    await kube.create("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "cp-1"},
                                        "spec": {"providerID": "k3s://cp-1"}})
    job = shutdown_job(None, slot, None, Settings(), force=False, namespace=NS, image="runner:test",
                       node=observed_node(slot))
    done, output = await run_real(api, kube, tmp_path, collections, job, job["metadata"]["name"])
    assert conditions(done)[-1] == ("Complete", "True", "CompletionsReached"), output[-3000:]
    node = await kube.get("/api/v1/nodes/cp-1")
    assert not node["spec"].get("unschedulable"), output[-3000:]
    assert "not this slot's machine" in output, output[-3000:]
    assert sim.power_state() == "off"
