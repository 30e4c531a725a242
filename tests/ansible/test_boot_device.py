"""machine_power's one-time boot device (boot_device: pxe | disk) through ansible-playbook: against ipmi_sim
(its chassis_control records the boot device the BMC was told) and the sushy-tools Redfish emulator (the
launcher records each PATCH body; the emulator keeps the target)."""
from __future__ import annotations

from hc_ansible import run_module, run_modules


def ipmi(sim, state, **extra):
    return dict({"method": "ipmi", "state": state, "timeout": 20, "ipmi": sim.module_args()}, **extra)


def test_ipmi_sets_the_boot_device_just_before_the_boot_and_only_then(tmp_path, ipmi_sim):
    results, proc, _ = run_modules(tmp_path, "homecluster.infra.machine_power", [
        ipmi(ipmi_sim, "powered_on", boot_device="pxe"),
        ipmi(ipmi_sim, "powered_on", boot_device="pxe"),   # already on: boots nothing, sets nothing
        ipmi(ipmi_sim, "reset", boot_device="disk"),
    ])
    first, again, reset = results
    assert not first.get("failed"), proc.stdout[-3000:]
    assert first["steps"] == ["set_boot_device", "power_on"] and first["state"] == "on"
    assert again["steps"] == [] and not again["changed"]
    assert reset["steps"] == ["set_boot_device", "reset"], reset
    sets = [c for c in ipmi_sim.calls() if c.startswith("set ")]
    # ipmi_sim names the hd device "default"; each boot device precedes its power command
    assert sets == ["set boot pxe", "set power 1", "set boot default"] + sets[3:], sets
    assert all(not c.startswith("set boot") for c in sets[3:]), sets


def test_check_mode_lists_the_boot_device_step_and_sets_nothing(tmp_path, ipmi_sim):
    result, _, _ = run_module(tmp_path, "homecluster.infra.machine_power", ipmi(ipmi_sim, "powered_on", boot_device="pxe"),
                              check=True)
    assert result["steps"] == ["set_boot_device", "power_on"] and result["changed"]
    assert not any(c.startswith("set ") for c in ipmi_sim.calls()) and ipmi_sim.power == "off"


def test_redfish_boots_once_from_pxe(tmp_path, redfish_emulator):
    args = {"method": "redfish", "state": "powered_on", "timeout": 20, "boot_device": "pxe",
            "redfish": dict(redfish_emulator.module_args(), system_id=redfish_emulator.system_id)}
    result, proc, _ = run_module(tmp_path, "homecluster.infra.machine_power", args)
    assert not result.get("failed"), proc.stdout[-3000:]
    assert result["steps"] == ["set_boot_device", "power_on"] and redfish_emulator.power() == "On"
    boots = [{k: v for k, v in p["Boot"].items() if v is not None} for p in redfish_emulator.patches() if "Boot" in p]
    assert boots == [{"BootSourceOverrideTarget": "Pxe", "BootSourceOverrideEnabled": "Once"}], boots
    assert redfish_emulator.system()["Boot"]["BootSourceOverrideTarget"] == "Pxe"


def test_a_boot_device_without_a_boot_or_a_bmc_is_refused(tmp_path, ipmi_sim):
    results, _, _ = run_modules(tmp_path, "homecluster.infra.machine_power", [
        ipmi(ipmi_sim, "query", boot_device="pxe"),
        {"method": "wol", "state": "powered_on", "boot_device": "pxe", "wol": {"mac_address": "52:54:00:12:34:56"}},
    ])
    query, wol = results
    assert query["failed"] and "boot_device" in query["msg"] and "state=query" in query["msg"]
    assert wol["failed"] and "boot_device" in wol["msg"] and "method=wol" in wol["msg"]
    assert ipmi_sim.calls() == []


def test_the_power_playbook_passes_the_boot_device(tmp_path, ipmi_sim):
    import json

    from hc_ansible import run_playbook
    inventory = tmp_path / "machines.yml"
    inventory.write_text(json.dumps({"all": {"hosts": {"worker-01": {
        "power_method": "ipmi", "ipmi": {"address": "127.0.0.1", "port": ipmi_sim.port},
        "credentials": {"username": ipmi_sim.username, "password": ipmi_sim.password}}}}}))
    proc, _ = run_playbook(tmp_path, "homecluster.infra.power",
                           {"slot": "worker-01", "state": "powered_on", "boot_device": "pxe"}, ["-i", str(inventory)])
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "set_boot_device, power_on" in proc.stdout and ipmi_sim.power == "on"
    assert [c for c in ipmi_sim.calls() if c.startswith("set ")][:2] == ["set boot pxe", "set power 1"]
