"""Bad module arguments through a real ansible-playbook run (issue 14): a handful of the cases the property
suite (tests/unit/plugins/modules/test_module_args_properties.py) found, as Ansible itself delivers them
(YAML -> JSON -> the module's own process). Each task fails with a message naming the option, none ends
in a MODULE FAILURE traceback, and the password appears nowhere in the output, even at -vvv.
"""
from __future__ import annotations

import json

import yaml
from hc_ansible import collection_ready, run_playbook

SECRET = "Pw-77c0ffee1234"
CASES = [  # (module, args, option the failure must name)
    ("machine_power", {"method": "ipmi", "ipmi": False}, "ipmi"),
    ("machine_power", {"method": "ipmi", "ipmi": {"address": "10.0.0.5", "username": "admin", "password": SECRET,
                                                  "port": "inf"}}, "ipmi.port"),
    ("machine_power", {"method": "ipmi", "poll_interval": "nan",
                       "ipmi": {"address": "10.0.0.5", "username": "admin", "password": SECRET}}, "poll_interval"),
    ("machine_power", {"method": "redfish", "redfish": {"endpoint": "https://bmc", "username": "root",
                                                        "password": SECRET, "verify_tls": "maybe"}}, "verify_tls"),
    ("node_drain", {"name": "w1", "retry_interval": "inf"}, "retry_interval"),
    ("node_drain", {"name": "w1", "timeout": "-inf"}, "timeout"),
    ("node_cordon", {"name": "Worker_01/../x"}, "name"),
]


def test_bad_arguments_fail_naming_the_option_without_traceback_or_secret(tmp_path):
    collection_ready()
    tasks = [{"name": f"case {i}", f"homecluster.infra.{module}": args, "ignore_errors": True, "register": f"r{i}"}
             for i, (module, args, _) in enumerate(CASES)]
    results_file = tmp_path / "results.json"
    registered = ", ".join(f"r{i}" for i in range(len(CASES)))
    tasks.append({"name": "keep the results", "ansible.builtin.copy": {
        "content": "{{ [%s] | to_json }}" % registered, "dest": str(results_file), "mode": "0600"}})
    playbook = tmp_path / "bad-args.yml"
    playbook.write_text(yaml.safe_dump([{"hosts": "localhost", "connection": "local", "gather_facts": False,
                                         "tasks": tasks}], sort_keys=False))
    proc, _ = run_playbook(tmp_path, str(playbook), args=("-vvv",))
    output = proc.stdout + proc.stderr
    assert SECRET not in output
    assert "Traceback" not in output and "MODULE FAILURE" not in output, output[-3000:]
    assert results_file.exists(), output[-3000:]
    for (module, _, option), result in zip(CASES, json.loads(results_file.read_text())):
        assert result.get("failed"), (module, result)
        assert option in result["msg"], (module, option, result["msg"])
