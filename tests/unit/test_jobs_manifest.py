"""The lifecycle Job builders: every field the contract (docs/job-contract.md) promises."""
from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import timedelta

import kubernetes_validate
import pytest
from support import objects

from homecluster import names
from homecluster.jobs import (
    JOB_VARS_ANNOTATION,
    JobSpecError,
    shutdown_job,
    startup_job,
)
from homecluster.jobs.extravars import boot_budget, graceful_wait_budget

NS = "homecluster-system"
IMAGE = "ghcr.io/homecluster-dev/runner:0.1.0"


@dataclass
class FakeSettings:
    """Stands in for homecluster.model.settings.Settings: the builders only read these attributes."""

    startup_job_timeout: timedelta = timedelta(minutes=5)
    shutdown_job_timeout: timedelta = timedelta(minutes=7, seconds=30)


def make_slot(method: str = "ipmi", name: str = "worker-01", **power) -> dict:
    blocks = {
        "ipmi": {"ipmi": {"address": "10.0.0.11", "port": 6230,
                          "credentialsSecretRef": {"name": "worker-01-bmc"}}},
        "redfish": {"redfish": {"endpoint": "https://10.0.0.12", "systemId": "1", "verifyTLS": False,
                                "credentialsSecretRef": {"name": "worker-01-bmc"}}},
        "wol": {"wol": {"macAddress": "52:54:00:12:34:56", "broadcastAddress": "10.0.0.255", "port": 9},
                "ssh": {"host": "10.0.0.13", "user": "ops", "credentialsSecretRef": {"name": "worker-01-ssh"}}},
    }[method]
    blocks.update(power)
    return {
        "apiVersion": "infra.homecluster.dev/v2alpha1", "kind": "Node",
        "metadata": {"name": name, "uid": "slot-uid-1"},
        "spec": {"groupRef": "pool-a", "nodeName": f"{name}.lan", "power": {"method": method, **blocks}},
        "status": {"shutdown": {"attempts": 2}},
    }


def make_claim(name: str = "worker-01-7f4b9c", **status) -> dict:
    """A pending claim on worker-01 at attempt 2, with the uid its Jobs' owner reference names."""
    return objects.claim(name, "worker-01", "pending", metadata={"uid": "claim-uid-1"}, attempt=2, **status)


GROUP = {"metadata": {"name": "pool-a", "uid": "g"}, "spec": {"maxSize": 3}}


def pod(job: dict) -> dict:
    return job["spec"]["template"]["spec"]


def job_vars(job: dict) -> dict:
    return json.loads(job["spec"]["template"]["metadata"]["annotations"][JOB_VARS_ANNOTATION])


def mounts(job: dict) -> dict:
    return {m["mountPath"]: m for m in pod(job)["containers"][0]["volumeMounts"]}


def volumes(job: dict) -> dict:
    return {v["name"]: v for v in pod(job)["volumes"]}


def test_startup_job_is_a_valid_batch_v1_job():
    job = startup_job(make_claim(), make_slot(), GROUP, FakeSettings(), namespace=NS, image=IMAGE)
    # The real Kubernetes 1.37 OpenAPI schema, strict: an unknown or misspelt field fails here.
    kubernetes_validate.validate(job, "1.37.0", strict=True)
    assert job["metadata"]["name"] == "worker-01-7f4b9c-startup"
    assert job["metadata"]["namespace"] == NS


def test_startup_job_policy_fields():
    job = startup_job(make_claim(), make_slot(), GROUP, FakeSettings(), namespace=NS, image=IMAGE)
    spec = job["spec"]
    assert spec["backoffLimit"] == 0
    assert spec["activeDeadlineSeconds"] == 300
    assert spec["ttlSecondsAfterFinished"] == 3600
    assert pod(job)["restartPolicy"] == "Never"
    assert pod(job)["serviceAccountName"] == "homecluster-job"
    assert pod(job)["automountServiceAccountToken"] is False
    assert "hostNetwork" not in pod(job)


def test_owner_reference_is_the_claim():
    job = startup_job(make_claim(), make_slot(), GROUP, FakeSettings(), namespace=NS, image=IMAGE)
    assert job["metadata"]["ownerReferences"] == [{
        "apiVersion": "infra.homecluster.dev/v2alpha1", "kind": "NodeClaim", "name": "worker-01-7f4b9c",
        "uid": "claim-uid-1", "controller": True, "blockOwnerDeletion": True,
    }]


def test_labels_on_job_and_pod_template():
    job = startup_job(make_claim(), make_slot(), GROUP, FakeSettings(), namespace=NS, image=IMAGE)
    expected = {
        names.LABEL_CLAIM: "worker-01-7f4b9c", names.LABEL_SLOT: "worker-01", names.LABEL_GROUP: "pool-a",
        names.LABEL_JOB_KIND: "startup", "app.kubernetes.io/managed-by": "homecluster",
    }
    assert job["metadata"]["labels"] == expected
    assert job["spec"]["template"]["metadata"]["labels"] == expected


def test_command_follows_the_contract():
    job = startup_job(make_claim(), make_slot(), GROUP, FakeSettings(), namespace=NS, image=IMAGE)
    container = pod(job)["containers"][0]
    assert container["command"] == [
        "ansible-runner", "run", "/runner", "--playbook", "homecluster.infra.startup",
        "--cmdline", "-e job_vars_file=/etc/homecluster/job/vars.json -e credentials_dir=/etc/homecluster/credentials",
    ]
    assert container["image"] == IMAGE
    down = shutdown_job(make_claim(), make_slot(), GROUP, FakeSettings(), force=False, namespace=NS, image=IMAGE)
    assert pod(down)["containers"][0]["command"][4] == "homecluster.infra.shutdown"


def test_volumes_vars_credentials_runner():
    job = startup_job(make_claim(), make_slot(), GROUP, FakeSettings(), namespace=NS, image=IMAGE)
    m, v = mounts(job), volumes(job)
    assert v[m["/runner"]["name"]] == {"name": "runner", "emptyDir": {}}
    vars_vol = v[m["/etc/homecluster/job"]["name"]]["downwardAPI"]
    assert vars_vol["items"] == [{"path": "vars.json", "fieldRef": {
        "fieldPath": "metadata.annotations['infra.homecluster.dev/job-vars']"}}]
    cred = m["/etc/homecluster/credentials"]
    assert cred["readOnly"] is True
    assert v[cred["name"]]["secret"]["secretName"] == "worker-01-bmc"


def test_restricted_security_context():
    job = startup_job(make_claim(), make_slot(), GROUP, FakeSettings(), namespace=NS, image=IMAGE)
    sc = pod(job)["containers"][0]["securityContext"]
    assert sc["readOnlyRootFilesystem"] is True and sc["runAsNonRoot"] is True
    assert sc["allowPrivilegeEscalation"] is False and sc["capabilities"] == {"drop": ["ALL"]}
    assert pod(job)["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert pod(job)["securityContext"]["runAsNonRoot"] is True


def test_startup_vars_for_each_method():
    claim = make_claim()
    ipmi = job_vars(startup_job(claim, make_slot("ipmi"), GROUP, FakeSettings(), namespace=NS, image=IMAGE))
    assert ipmi == {
        "slot": "worker-01", "claim": "worker-01-7f4b9c", "attempt": 2, "group": "pool-a",
        "power_method": "ipmi", "ipmi": {"address": "10.0.0.11", "port": 6230}, "power_timeout": 120,
        "boot_check": {"host": "worker-01.lan", "port": 22}, "boot_budget": 240,  # 300 - 60: the wait gets what the
        # power step leaves of it (was a fixed 150 = 300 - 120 - 30, whatever the power step took)
    }
    red = job_vars(startup_job(claim, make_slot("redfish"), GROUP, FakeSettings(), namespace=NS, image=IMAGE))
    assert red["redfish"] == {"endpoint": "https://10.0.0.12", "system_id": "1", "verify_tls": False, "insecure": False}
    wol = job_vars(startup_job(claim, make_slot("wol"), GROUP, FakeSettings(), namespace=NS, image=IMAGE))
    assert wol["wol"] == {"mac_address": "52:54:00:12:34:56", "broadcast_address": "10.0.0.255", "port": 9}
    assert "ssh" not in wol and "node_name" not in wol and "force" not in wol
    assert wol["boot_check"] == {"host": "10.0.0.13", "port": 22}  # the machine's own address: spec.power.ssh.host


def test_boot_check_defaults_and_the_slot_field():
    claim, settings = make_claim(), FakeSettings(startup_job_timeout=timedelta(seconds=90))

    def check(slot):
        v = job_vars(startup_job(claim, slot, GROUP, settings, namespace=NS, image=IMAGE))
        return v["boot_check"], v["boot_budget"]

    slot = make_slot("redfish")
    del slot["spec"]["nodeName"]
    assert check(slot) == ({"host": "worker-01", "port": 22}, 45)  # no nodeName: the slot's name
    slot["spec"]["bootCheck"] = {"port": 10250}
    assert check(slot) == ({"host": "worker-01", "port": 10250}, 45)
    slot["spec"]["bootCheck"] = {"host": "10.0.0.40", "port": 2222}
    assert check(slot) == ({"host": "10.0.0.40", "port": 2222}, 45)
    shutdown = job_vars(shutdown_job(claim, slot, GROUP, settings, force=False, namespace=NS, image=IMAGE,
                                      number=1))
    assert "boot_check" not in shutdown and "boot_budget" not in shutdown


@pytest.mark.parametrize("job_timeout, budget", [
    (300, 240),  # the defaults: the power step and the wait end 60 s before the Job's deadline
    (900, 840),
    (90, 45),  # a short Job: half of it
    (40, 20),
    (1, 1),
])
def test_the_boot_budget_ends_before_the_startup_jobs_deadline(job_timeout, budget):
    assert boot_budget(job_timeout) == budget
    assert budget < job_timeout or job_timeout == 1


@pytest.mark.parametrize("job_timeout, drain, power, graceful, wait", [
    (600, 120, 120, 60, 60),  # the defaults: the whole graceful minute fits with room to spare
    (600, 120, 120, 900, 330),  # a graceful wait longer than the Job leaves only what is left after the rest
    (30, 120, 120, 60, 7),  # the integration tests' 30 s Job: a quarter of it, then the forced off
    (60, 5, 5, 60, 20),  # short drain and power steps: what is left after them and the margin
    (3, 120, 120, 60, 0),  # nothing to spare: straight to the forced off
])
def test_the_graceful_wait_leaves_the_forced_power_off_inside_the_shutdown_jobs_deadline(
        job_timeout, drain, power, graceful, wait):
    assert graceful_wait_budget(job_timeout, drain, power, graceful) == wait
    assert wait < job_timeout


def test_the_shutdown_job_carries_the_bounded_graceful_wait():
    slot = make_slot("ipmi", ipmi={"address": "10.0.0.11", "credentialsSecretRef": {"name": "s"}})
    settings = FakeSettings()
    settings.shutdown_job_timeout = timedelta(seconds=30)
    settings.graceful_timeout = timedelta(seconds=60)
    got = job_vars(shutdown_job(make_claim(), slot, GROUP, settings, namespace=NS, image=IMAGE, number=1,
                                force=False))
    assert got["graceful_timeout"] == 7


def test_defaults_fill_omitted_power_fields():
    slot = make_slot("ipmi", ipmi={"address": "10.0.0.11", "credentialsSecretRef": {"name": "s"}})
    assert job_vars(startup_job(make_claim(), slot, GROUP, FakeSettings(), namespace=NS,
                                image=IMAGE))["ipmi"]["port"] == 623
    slot = make_slot("wol", wol={"macAddress": "aa:bb:cc:dd:ee:ff"},
                     ssh={"host": "h", "credentialsSecretRef": {"name": "k"}})
    v = job_vars(startup_job(make_claim(), slot, GROUP, FakeSettings(), namespace=NS, image=IMAGE))
    assert v["wol"] == {"mac_address": "aa:bb:cc:dd:ee:ff", "broadcast_address": "255.255.255.255", "port": 9}
    v = job_vars(shutdown_job(None, slot, GROUP, FakeSettings(), force=False, namespace=NS, image=IMAGE))
    assert v["ssh"] == {"host": "h", "port": 22, "user": "root", "command": "poweroff"}


def test_wol_startup_uses_host_network_and_no_secret():
    job = startup_job(make_claim(), make_slot("wol"), GROUP, FakeSettings(), namespace=NS, image=IMAGE)
    assert pod(job)["hostNetwork"] is True
    assert pod(job)["dnsPolicy"] == "ClusterFirstWithHostNet"
    assert "credentials" not in volumes(job)
    assert "/etc/homecluster/credentials" not in mounts(job)


def test_wol_shutdown_uses_ssh_credentials_and_pod_network():
    job = shutdown_job(make_claim(), make_slot("wol"), GROUP, FakeSettings(), force=False, namespace=NS,
                       image=IMAGE)
    assert "hostNetwork" not in pod(job)
    assert volumes(job)["credentials"]["secret"]["secretName"] == "worker-01-ssh"
    v = job_vars(job)
    assert v["ssh"] == {"host": "10.0.0.13", "port": 22, "user": "ops", "command": "poweroff"}
    assert "wol" not in v


def test_shutdown_job_of_a_claim():
    claim = make_claim(shutdownAttempts=1)
    job = shutdown_job(claim, make_slot(), GROUP, FakeSettings(), force=True, namespace=NS, image=IMAGE)
    kubernetes_validate.validate(job, "1.37.0", strict=True)
    assert job["metadata"]["name"] == "worker-01-7f4b9c-shutdown-2"
    assert job["spec"]["activeDeadlineSeconds"] == 450
    assert job["metadata"]["ownerReferences"][0]["kind"] == "NodeClaim"
    assert job["metadata"]["labels"][names.LABEL_JOB_KIND] == "shutdown"
    # forced: no cordon, no drain, so no container holds a token
    assert pod(job)["automountServiceAccountToken"] is False and "initContainers" not in pod(job)
    assert not [v for v in pod(job)["volumes"] if "projected" in v]
    v = job_vars(job)
    assert v["force"] is True and v["node_name"] == ""  # no Node observed: nothing to name
    assert v["drain_timeout"] == 120 and v["graceful_timeout"] == 60
    assert v["claim"] == "worker-01-7f4b9c" and v["attempt"] == 2


def test_shutdown_job_of_an_unwanted_machine_is_owned_by_the_slot():
    job = shutdown_job(None, make_slot(), GROUP, FakeSettings(), force=False, namespace=NS, image=IMAGE)
    kubernetes_validate.validate(job, "1.37.0", strict=True)
    assert job["metadata"]["name"] == "worker-01-unwanted-3"  # slot status.shutdown.attempts is 2
    assert job["metadata"]["ownerReferences"] == [{
        "apiVersion": "infra.homecluster.dev/v2alpha1", "kind": "Node", "name": "worker-01",
        "uid": "slot-uid-1", "controller": True, "blockOwnerDeletion": True,
    }]
    assert names.LABEL_CLAIM not in job["metadata"]["labels"]
    v = job_vars(job)
    assert v["claim"] is None and v["attempt"] is None and v["force"] is False


def test_shutdown_number_and_episode_in_name():
    slot = make_slot()
    a = shutdown_job(None, slot, GROUP, FakeSettings(), force=False, namespace=NS, image=IMAGE, number=1,
                     episode="2026-03-04T09:38:15Z")
    b = shutdown_job(None, slot, GROUP, FakeSettings(), force=False, namespace=NS, image=IMAGE, number=1,
                     episode="2026-03-05T10:00:00Z")
    assert a["metadata"]["name"].startswith("worker-01-") and a["metadata"]["name"].endswith("-unwanted-1")
    assert a["metadata"]["name"] != b["metadata"]["name"]


def test_group_job_settings_override():
    group = {"metadata": {"name": "pool-a"}, "spec": {"jobs": {
        "image": "registry.lan/runner:custom", "imagePullPolicy": "Always", "serviceAccountName": "power-ops",
        "nodeSelector": {"kubernetes.io/hostname": "cp-1"},
        "tolerations": [{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists",
                         "effect": "NoSchedule"}],
        "priorityClassName": "system-cluster-critical",
        "resources": {"requests": {"cpu": "10m", "memory": "64Mi"}},
    }}}
    job = startup_job(make_claim(), make_slot(), group, FakeSettings(), namespace=NS, image=IMAGE,
                      allowed_images=["registry.lan/runner:custom"], allowed_service_accounts=["power-ops"])
    kubernetes_validate.validate(job, "1.37.0", strict=True)
    p, c = pod(job), pod(job)["containers"][0]
    assert c["image"] == "registry.lan/runner:custom" and c["imagePullPolicy"] == "Always"
    assert c["resources"] == {"requests": {"cpu": "10m", "memory": "64Mi"}}
    assert p["serviceAccountName"] == "power-ops"
    assert p["nodeSelector"] == {"kubernetes.io/hostname": "cp-1"}
    assert p["tolerations"][0]["key"] == "node-role.kubernetes.io/control-plane"
    assert p["priorityClassName"] == "system-cluster-critical"


@pytest.mark.parametrize("jobs,field,words", [
    ({"image": "evil.example/miner:1"}, "spec.jobs.image", "--job-images"),
    ({"serviceAccountName": "power-ops"}, "spec.jobs.serviceAccountName", "--job-service-accounts"),
    ({"serviceAccountName": "homecluster-controller"}, "spec.jobs.serviceAccountName", "operator's or the autoscaler's"),
    ({"serviceAccountName": "cluster-autoscaler"}, "spec.jobs.serviceAccountName", "operator's or the autoscaler's"),
])
def test_a_group_cannot_choose_an_image_or_account_outside_the_allow_lists(jobs, field, words):
    group = {"metadata": {"name": "pool-a"}, "spec": {"jobs": jobs}}
    for build in (lambda **kw: startup_job(make_claim(), make_slot(), group, FakeSettings(), namespace=NS,
                                           image=IMAGE, **kw),
                  lambda **kw: shutdown_job(make_claim(), make_slot(), group, FakeSettings(), force=False,
                                            namespace=NS, image=IMAGE, **kw)):
        with pytest.raises(JobSpecError) as err:
            # listing the operator's or the autoscaler's account does not let it through either
            build(allowed_service_accounts=["homecluster-controller", "cluster-autoscaler"])
        assert 'Group "pool-a"' in str(err.value) and field in str(err.value) and words in str(err.value)


def test_service_account_parameter_and_ttl():
    job = startup_job(make_claim(), make_slot(), None, FakeSettings(), namespace=NS, image=IMAGE,
                      service_account="custom-sa", ttl_seconds_after_finished=60)
    assert pod(job)["serviceAccountName"] == "custom-sa"
    assert job["spec"]["ttlSecondsAfterFinished"] == 60
    # With no Group object the group name comes from the slot's groupRef.
    assert job_vars(job)["group"] == "pool-a"


def test_no_credential_can_reach_the_manifest():
    # A slot spec with credential-looking values in the wrong places (a user's mistake) must not leak
    # them: the builder copies only the fields the contract names and refers to the Secret by name.
    secret_values = ["hunter2-Pa55", "-----BEGIN OPENSSH PRIVATE KEY-----abc", "czNjcjN0"]
    slot = make_slot("ipmi", ipmi={"address": "10.0.0.11", "password": secret_values[0],
                                   "username": "admin", "privateKey": secret_values[1],
                                   "credentialsSecretRef": {"name": "worker-01-bmc",
                                                            "data": {"password": secret_values[2]}}})
    slot["spec"]["power"]["ssh"] = {"host": "h", "password": secret_values[0]}
    claim = make_claim()
    claim["spec"]["password"] = secret_values[0]
    for job in (startup_job(claim, slot, GROUP, FakeSettings(), namespace=NS, image=IMAGE),
                shutdown_job(claim, slot, GROUP, FakeSettings(), force=True, namespace=NS, image=IMAGE)):
        text = json.dumps(job)
        for value in secret_values + ["admin"]:
            assert value not in text
        assert '"data"' not in text and '"stringData"' not in text
        secret_volumes = [v for v in pod(job)["volumes"] if "secret" in v]
        # the key names the step reads are the only mention of a password: never a value
        assert "password" not in text.lower().replace('{"key": "password", "path": "password"}', "")
        assert secret_volumes == [{"name": "credentials", "secret": {
            "secretName": "worker-01-bmc", "defaultMode": 0o440,
            "items": [{"key": "username", "path": "username"}, {"key": "password", "path": "password"}]}}]


def test_secret_in_another_namespace_is_refused_with_a_clear_error():
    slot = make_slot("redfish", redfish={"endpoint": "https://bmc", "credentialsSecretRef": {
        "name": "bmc", "namespace": "other"}})
    with pytest.raises(JobSpecError) as err:
        startup_job(make_claim(), slot, GROUP, FakeSettings(), namespace=NS, image=IMAGE)
    text = str(err.value)
    assert 'slot "worker-01"' in text
    assert "spec.power.redfish.credentialsSecretRef.namespace" in text
    assert '"other"' in text and NS in text
    # The same namespace, spelt out, is fine.
    slot["spec"]["power"]["redfish"]["credentialsSecretRef"]["namespace"] = NS
    startup_job(make_claim(), slot, GROUP, FakeSettings(), namespace=NS, image=IMAGE)


@pytest.mark.parametrize("mutate, field", [
    (lambda s: s["spec"]["power"].update(method="carrier-pigeon"), "spec.power.method"),
    (lambda s: s["spec"]["power"].pop("ipmi"), "spec.power.ipmi"),
    (lambda s: s["spec"]["power"]["ipmi"].pop("credentialsSecretRef"), "spec.power.ipmi.credentialsSecretRef.name"),
    (lambda s: s["metadata"].pop("uid"), None),
])
def test_bad_slot_specs_name_the_field(mutate, field):
    slot = make_slot("ipmi")
    mutate(slot)
    with pytest.raises(JobSpecError) as err:
        shutdown_job(None, slot, GROUP, FakeSettings(), force=False, namespace=NS, image=IMAGE)
    assert 'slot "worker-01"' in str(err.value) or 'Node "worker-01"' in str(err.value)
    if field:
        assert field in str(err.value)


def test_timeouts_become_whole_seconds_and_must_be_positive():
    s = FakeSettings(startup_job_timeout=timedelta(seconds=1.2))
    assert startup_job(make_claim(), make_slot(), GROUP, s, namespace=NS,
                       image=IMAGE)["spec"]["activeDeadlineSeconds"] == 2
    with pytest.raises(JobSpecError, match="startup_job_timeout"):
        startup_job(make_claim(), make_slot(), GROUP, FakeSettings(startup_job_timeout=timedelta(0)),
                    namespace=NS, image=IMAGE)


def test_settings_power_timeouts_are_read_when_present():
    @dataclass
    class Richer(FakeSettings):
        power_timeout: timedelta = timedelta(seconds=45)
        drain_timeout: timedelta = timedelta(seconds=30)
        graceful_timeout: timedelta = timedelta(seconds=20)

    v = job_vars(shutdown_job(make_claim(), make_slot(), GROUP, Richer(), force=False, namespace=NS, image=IMAGE))
    assert (v["power_timeout"], v["drain_timeout"], v["graceful_timeout"]) == (45, 30, 20)


def test_long_names_fit_in_63_characters():
    long = "w" * 60 + ".rack-7.example"
    job = startup_job(make_claim(name=long), make_slot(name=long), GROUP, FakeSettings(), namespace=NS,
                      image=IMAGE)
    kubernetes_validate.validate(job, "1.37.0", strict=True)
    assert len(job["metadata"]["name"]) <= 63 and job["metadata"]["name"].endswith("-startup")
    for value in job["metadata"]["labels"].values():
        assert len(value) <= 63
    other = startup_job(make_claim(name=long + "x"), make_slot(name=long), GROUP, FakeSettings(), namespace=NS,
                        image=IMAGE)
    assert other["metadata"]["name"] != job["metadata"]["name"]


def test_builders_are_pure_and_deterministic():
    claim, slot = make_claim(), make_slot()
    before = json.dumps([claim, slot], sort_keys=True)
    a = startup_job(claim, slot, GROUP, FakeSettings(), namespace=NS, image=IMAGE)
    b = startup_job(claim, slot, GROUP, FakeSettings(), namespace=NS, image=IMAGE)
    assert a == b
    assert json.dumps([claim, slot], sort_keys=True) == before


def test_the_real_settings_object_is_accepted():
    from homecluster.model.settings import Settings

    s = Settings()
    up = startup_job(make_claim(), make_slot(), GROUP, s, namespace=NS, image=IMAGE)
    down = shutdown_job(None, make_slot(), GROUP, s, force=True, namespace=NS, image=IMAGE)
    assert up["spec"]["activeDeadlineSeconds"] == round(s.startup_job_timeout.total_seconds())
    assert down["spec"]["activeDeadlineSeconds"] == round(s.shutdown_job_timeout.total_seconds())


@pytest.mark.parametrize("node,target", [
    (None, ""),  # not observed (or refused by model.boundary): nothing is cordoned or drained
    ({"metadata": {"name": "worker-01"}, "spec": {"providerID": "homecluster://worker-01"}}, "worker-01"),
    ({"metadata": {"name": "w1.lan"}, "spec": {"providerID": "homecluster://worker-01"}}, "w1.lan"),
    ({"metadata": {"name": "worker-01"}, "spec": {"providerID": "k3s://cp-1"}}, ""),  # another machine's Node
])
def test_a_shutdown_cordons_and_drains_only_the_slots_own_node(node, target):
    job = shutdown_job(make_claim(), make_slot(), GROUP, FakeSettings(), force=False, namespace=NS, image=IMAGE,
                       node=node)
    assert job_vars(job)["node_name"] == target
    assert job_vars(job)["node_provider_id"] == "homecluster://worker-01"


def test_only_the_cordon_and_drain_step_holds_a_token():
    # Issue 15: the container that parses the BMC's replies holds no Kubernetes token; the init container
    # that cordons and drains mounts it, and no credentials.
    node = {"metadata": {"name": "worker-01.lan"}, "spec": {"providerID": "homecluster://worker-01"}}  # observed
    job = shutdown_job(make_claim(), make_slot(), GROUP, FakeSettings(), force=False, namespace=NS, image=IMAGE,
                       node=node)
    kubernetes_validate.validate(job, "1.37.0", strict=True)
    spec = pod(job)
    assert spec["automountServiceAccountToken"] is False
    [init] = spec["initContainers"]
    [main] = spec["containers"]
    token_volumes = {v["name"] for v in spec["volumes"]
                     if any("serviceAccountToken" in s for s in (v.get("projected") or {}).get("sources", []))}
    assert token_volumes == {"kube-api-access"}
    assert [m["mountPath"] for m in init["volumeMounts"] if m["name"] in token_volumes] == [
        "/var/run/secrets/kubernetes.io/serviceaccount"]
    assert not [m for m in main["volumeMounts"] if m["name"] in token_volumes]
    assert not [m for m in init["volumeMounts"] if m["name"] == "credentials"]
    assert [m for m in main["volumeMounts"] if m["name"] == "credentials"]
    assert init["command"][4] == "homecluster.infra.drain" and "cordon_and_drain=false" in main["command"][-1]
    assert init["securityContext"] == main["securityContext"] and init["image"] == main["image"]


def test_a_slots_known_hosts_is_mounted_for_the_ssh_power_off():
    slot = make_slot("wol")
    job = shutdown_job(make_claim(), slot, GROUP, FakeSettings(), force=True, namespace=NS, image=IMAGE)
    assert "known-hosts" not in volumes(job) and "ssh_known_hosts_file" not in " ".join(pod(job)["containers"][0]["command"])
    slot["spec"]["power"]["ssh"]["knownHostsConfigMapRef"] = {"name": "worker-01-host-key"}
    job = shutdown_job(make_claim(), slot, GROUP, FakeSettings(), force=True, namespace=NS, image=IMAGE)
    kubernetes_validate.validate(job, "1.37.0", strict=True)
    assert volumes(job)["known-hosts"]["configMap"] == {"name": "worker-01-host-key", "defaultMode": 0o444,
                                                         "items": [{"key": "known_hosts", "path": "known_hosts"}]}
    assert mounts(job)["/etc/homecluster/ssh"]["readOnly"] is True
    assert pod(job)["containers"][0]["command"][-1].endswith("-e ssh_known_hosts_file=/etc/homecluster/ssh/known_hosts")
    # a startup sends a magic packet: no SSH, no host key
    assert "known-hosts" not in volumes(startup_job(make_claim(), slot, GROUP, FakeSettings(), namespace=NS, image=IMAGE))
