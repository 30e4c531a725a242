"""The lab's pure parts: the pool's objects, fault annotations, the glance, the operator's command line."""
from __future__ import annotations

import argparse
import datetime as dt

import pytest

from homecluster import glance as rows
from homecluster_lab import faultknobs, glance, topology
from homecluster_lab.cluster import LabConfig, LabError, split_address, webhook_configuration
from homecluster_lab.machines.boot import Faults
from homecluster_lab.operator_proc import OperatorOptions, command, environment


# -- topology -----------------------------------------------------------------------------------------------
def test_slot_names_are_padded_so_sorting_by_name_is_numeric():
    assert topology.slot_names(3) == ["worker-01", "worker-02", "worker-03"]
    names = topology.slot_names(100)
    assert names[0] == "worker-001" and names[-1] == "worker-100" and sorted(names) == names


def test_zero_slots_is_refused_with_the_flag_named():
    with pytest.raises(ValueError, match="--slots 0"):
        topology.slot_names(0)


def test_mixed_driver_takes_each_method_in_turn_and_a_single_driver_is_used_for_all():
    assert [topology.method_for(i, "mixed") for i in range(4)] == ["ipmi", "redfish", "wol", "ipmi"]
    assert {topology.method_for(i, "redfish") for i in range(5)} == {"redfish"}
    with pytest.raises(ValueError, match="--driver 'amt'"):
        topology.method_for(0, "amt")


def test_wol_slots_get_an_ssh_secret_and_bmc_slots_a_bmc_secret():
    assert topology.secret_name("worker-03", "wol") == "worker-03-ssh"
    assert topology.secret_name("worker-01", "ipmi") == "worker-01-bmc"


def test_group_declares_the_readiness_taint_the_machines_carry_and_no_provision_time():
    group = topology.group("workers", 5, {"cpu": "4", "memory": "8Gi", "pods": "110"})
    assert group["spec"]["maxSize"] == 5 and group["spec"]["minSize"] == 0
    assert group["spec"]["nodeReadinessTaints"] == [{"key": topology.READINESS_TAINT, "effect": "NoSchedule"}]
    assert "maxNodeProvisionTime" not in group["spec"]  # so the settings' boot floor is the budget
    assert group["spec"]["template"]["capacity"]["pods"] == "110"


def test_a_slot_refers_to_its_secret_in_the_operator_namespace():
    """(Schema validity is checked by the API server when the in-process lab creates them.)"""
    from homecluster_lab.machines.fleet import Endpoints
    ep = Endpoints("worker-01", "ipmi", ipmi={"address": "127.0.0.1", "port": 6230}, username="u", password="p")
    slot = topology.slot("worker-01", "workers", ep.power_spec("worker-01-bmc", "homecluster-system"))
    assert slot["spec"]["power"]["ipmi"]["credentialsSecretRef"] == {"name": "worker-01-bmc",
                                                                     "namespace": "homecluster-system"}
    assert slot["spec"]["groupRef"] == "workers" and slot["kind"] == "Node"


# -- config -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("address", ["50051", "localhost", ":x", "127.0.0.1:99999"])
def test_a_bad_provider_address_names_the_flag_and_the_format(address):
    with pytest.raises(LabError, match="--provider-address .*HOST:PORT"):
        split_address(address)


def test_settings_are_checked_before_anything_starts():
    with pytest.raises(LabError, match="startup_job_timeout"):
        LabConfig(settings={"startup_job_timeout": "soon"}).validate()
    LabConfig(settings={"startup_job_timeout": "2s", "attempt_limit": "3"}).validate()


def test_vm_machines_are_accepted_as_a_choice():
    LabConfig(machines="vm").validate()
    with pytest.raises(LabError, match="--machines 'metal'"):
        LabConfig(machines="metal").validate()


def test_a_real_node_needs_the_real_control_plane():
    with pytest.raises(LabError, match="--real-node needs --control-plane kubernetes"):
        LabConfig(real_node=True).validate()
    LabConfig(real_node=True, control_plane="kubernetes").validate()


def test_the_real_node_flag_reaches_the_config():
    import argparse

    from homecluster_lab.cli import add_arguments, config_from_args
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    assert config_from_args(parser.parse_args(["--control-plane", "kubernetes", "--real-node"])).real_node
    assert not config_from_args(parser.parse_args([])).real_node


# -- fault annotations --------------------------------------------------------------------------------------
def test_no_annotation_is_a_healthy_machine():
    assert faultknobs.parse("w", None) == Faults()
    assert faultknobs.parse("w", " ") == Faults()


def test_the_annotation_names_the_whole_set_of_knobs():
    f = faultknobs.parse("w", "never-boots, flaps=3,powers-off-while-ready=20")
    assert f == Faults(never_boots=True, flaps=True, flap_seconds=3.0, powers_off_while_ready=20.0)
    assert faultknobs.describe(f) == "never-boots,flaps=3,powers-off-while-ready=20"
    assert faultknobs.parse("w", faultknobs.describe(f)) == f


@pytest.mark.parametrize("value, words", [
    ("never-boot", "unknown knob 'never-boot'"),
    ("powers-off-while-ready", "needs a number of seconds"),
    ("powers-off-while-ready=soon", "not a number of seconds"),
    ("never-boots=3", "takes no value"),
])
def test_a_bad_annotation_names_the_slot_the_knob_and_the_fix(value, words):
    with pytest.raises(faultknobs.FaultSpecError) as err:
        faultknobs.parse("worker-02", value)
    assert "slot worker-02" in str(err.value) and faultknobs.ANNOTATION in str(err.value)
    assert words in str(err.value)


class _Machine:
    def __init__(self):
        self.calls = []

    def set_faults(self, **knobs):
        self.calls.append(knobs)


def _slot(name, value=None):
    md = {"name": name}
    if value is not None:
        md["annotations"] = {faultknobs.ANNOTATION: value}
    return {"metadata": md}


def test_fault_sync_applies_a_change_once_and_heals_when_the_annotation_goes():
    machine, reports = _Machine(), []
    sync = faultknobs.FaultSync({"w1": machine}, reports.append)
    assert sync.apply([_slot("w1")]) == [] and machine.calls == []  # healthy from the start: nothing to do
    assert sync.apply([_slot("w1", "never-boots")]) == ["w1"]
    assert sync.apply([_slot("w1", "never-boots")]) == []  # unchanged: not applied again
    assert machine.calls[-1]["never_boots"] is True
    sync.apply([_slot("w1")])
    assert machine.calls[-1] == {**Faults().__dict__}
    assert "none (healthy)" in reports[-1]


def test_fault_sync_reports_a_bad_value_and_leaves_the_machine_alone():
    machine, reports = _Machine(), []
    sync = faultknobs.FaultSync({"w1": machine}, reports.append)
    sync.apply([_slot("w1", "explodes")])
    assert machine.calls == [] and "unknown knob 'explodes'" in reports[0]


# -- glance ----------------------------------------------------------------------------------------------
NOW = dt.datetime(2026, 3, 4, 9, 40, 0, tzinfo=dt.timezone.utc)


def _slot_obj(name, **status):
    return {"metadata": {"name": name, "creationTimestamp": "2026-03-04T09:38:00Z"},
            "spec": {"groupRef": "workers"}, "status": status}


def test_human_durations_read_like_kubectl():
    assert [rows.human_duration(s) for s in (5, 119, 200, 3600 * 3 + 120, 86400 * 3)] == \
        ["5s", "119s", "3m20s", "3h2m", "3d"]


def test_the_glance_shows_the_printer_columns_then_the_machine():
    slots = [_slot_obj("worker-02"),
             _slot_obj("worker-01", powerState="on", phase="ready", claim="worker-01-x", attempt=1)]
    claims = [{"metadata": {"name": "worker-01-x", "creationTimestamp": "2026-03-04T09:39:00Z"},
               "spec": {"slotRef": "worker-01", "deadlineAt": "2026-03-04T09:51:10Z"},
               "status": {"phase": "booting", "attempt": 1}}]
    frame = glance.render(slots, claims, {"worker-01": "on", "worker-02": "off [never-boots]"}, NOW)
    lines = frame.text.splitlines()
    assert lines[1].split() == ["NAME", "GROUP", "POWER", "PHASE", "CLAIM", "ATTEMPT", "AGE", "MACHINE"]
    assert lines[2].split() == ["worker-01", "workers", "on", "ready", "worker-01-x", "1", "2m", "on"]
    assert lines[3].split()[:3] == ["worker-02", "workers", "-"] and lines[3].endswith("off [never-boots]")
    claim_header = next(i for i, line in enumerate(lines) if line.startswith("NAME   ") and "SLOT" in line)
    assert lines[claim_header].split() == ["NAME", "SLOT", "PHASE", "ATTEMPT", "REASON", "DEADLINE", "AGE"]
    assert lines[claim_header + 1].split() == ["worker-01-x", "worker-01", "booting", "1", "-", "in", "11m", "60s"]


def test_an_unstamped_claim_reads_pending_and_a_deleting_one_says_so():
    claim = {"metadata": {"name": "c", "deletionTimestamp": "2026-03-04T09:39:59Z"}, "spec": {"slotRef": "w"}}
    assert rows.claim_row(claim, NOW)[2] == "pending (deleting)"


def test_the_change_key_ignores_time_passing_but_not_a_phase_move():
    slots = [_slot_obj("worker-01", phase="booting")]
    a = glance.render(slots, [], {"worker-01": "on"}, NOW)
    b = glance.render(slots, [], {"worker-01": "on"}, NOW + dt.timedelta(seconds=30))
    c = glance.render([_slot_obj("worker-01", phase="ready")], [], {"worker-01": "on"}, NOW)
    assert a.text != b.text and a.key == b.key and a.key != c.key


# -- the operator's command line ----------------------------------------------------------------------------
OPTIONS = OperatorOptions(kubeconfig="/lab/kubeconfig", namespace="homecluster-system",  # type: ignore[arg-type]
                          provider_address="127.0.0.1:5000", webhook_address="127.0.0.1:9443",
                          webhook_cert="/lab/tls/webhook.crt", webhook_key="/lab/tls/webhook.key",  # type: ignore
                          settings={"startup_job_timeout": "2s"})


def test_the_operators_command_line_is_one_homecluster_run_parses():
    """Every flag the lab passes is one `homecluster run` takes: its own parser reads the argv."""
    from homecluster.operator.main import add_arguments, settings_from

    argv = command(OPTIONS)
    assert argv[argv.index("-m"):argv.index("run") + 1] == ["-m", "homecluster_lab.operator_boot", "run"]
    parser = argparse.ArgumentParser(exit_on_error=False)
    add_arguments(parser)
    args = parser.parse_args(argv[argv.index("run") + 1:])
    assert (args.kubeconfig, args.namespace, args.provider_address, args.provider_insecure) == \
        ("/lab/kubeconfig", "homecluster-system", "127.0.0.1:5000", True)
    assert (args.webhook_address, args.webhook_cert, args.webhook_key) == \
        ("127.0.0.1:9443", "/lab/tls/webhook.crt", "/lab/tls/webhook.key")
    assert settings_from(args).startup_job_timeout == dt.timedelta(seconds=2)


def test_the_operator_reads_no_stale_setting_from_the_labs_environment():
    env = environment(OPTIONS, {"PATH": "/bin", "HOMECLUSTER_STALE": "x", "HOMECLUSTER_STARTUP_JOB_TIMEOUT": "9s"})
    assert "HOMECLUSTER_STALE" not in env and "HOMECLUSTER_STARTUP_JOB_TIMEOUT" not in env
    assert env["KUBECONFIG"] == "/lab/kubeconfig" and env["PATH"] == "/bin"


def test_the_webhook_configuration_sends_claim_creates_to_the_operator_with_its_ca():
    cfg = webhook_configuration("https://127.0.0.1:9443/validate", b"PEM")
    hook = cfg["webhooks"][0]
    assert hook["name"] == "nodeclaim-v2alpha1.kb.io"
    assert hook["clientConfig"] == {"url": "https://127.0.0.1:9443/validate", "caBundle": "UEVN"}
    assert hook["rules"][0]["operations"] == ["CREATE"] and hook["rules"][0]["resources"] == ["nodeclaims"]


def test_every_controller_setting_is_a_lab_flag():
    from homecluster_lab.cli import add_arguments, config_from_args
    from homecluster.model.settings import Settings
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["--startup-job-timeout", "3s", "--attempt-limit", "2"])
    for name in Settings.names():
        assert hasattr(args, "setting_" + name), name
    assert config_from_args(args).settings == {"startup_job_timeout": "3s", "attempt_limit": "2"}


async def test_the_terminal_glance_keeps_the_header_and_a_pipe_gets_each_change_once():
    import asyncio
    import io

    state = {"phase": "off"}

    def snapshot():
        return [_slot_obj("worker-01", phase=state["phase"])], [], {"worker-01": "off"}

    async def run(tty: bool) -> str:
        out = io.StringIO()
        task = asyncio.create_task(glance.show(snapshot, out, tty=tty, interval=0.01, header="lab ready: x"))
        await asyncio.sleep(0.1)
        state["phase"] = "pending"
        await asyncio.sleep(0.1)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        state["phase"] = "off"
        return out.getvalue()

    piped = await run(tty=False)
    assert piped.count("---- pool at a glance") == 2 and "lab ready" not in piped
    terminal = await run(tty=True)
    assert terminal.count("\x1b[2J") > 5 and terminal.count("lab ready: x") == terminal.count("\x1b[2J")
