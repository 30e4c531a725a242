"""A power method is registered in its own protocol file (power_registry.py) and machine_power takes it from
there alone: a method registered here, in one place, is a choice of `method`, has its own dict of options
(required with it), serves only the states it registers, sets a boot device only when it says it can, has its
library checked and its driver built and run by machine_power's real main(). And the hand-kept lists machine_power
and power_plan had (the methods' choices, _LIBRARIES, METHOD_STATES, required_if, build_driver's branches) are gone:
no protocol's name is written in their code."""
from __future__ import annotations

import ast
import contextlib
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from module_run import patch_module_args

from ansible_collections.homecluster.infra.plugins.module_utils import power_registry
from ansible_collections.homecluster.infra.plugins.module_utils.power_common import OFF, ON, PowerDriver
from ansible_collections.homecluster.infra.plugins.modules import machine_power

PLUGINS = Path(machine_power.__file__).resolve().parents[1]


class Lamp(PowerDriver):
    """A machine that is its own power switch: the driver of the method registered below."""
    method = "lamp"
    state = OFF

    def query(self):
        return Lamp.state

    def power_on(self):
        Lamp.state = ON


@pytest.fixture
def lamp():
    """The whole of a new protocol's registration, as its file would write it."""
    Lamp.state = OFF
    built = []
    power_registry.register(power_registry.Method(
        "lamp",
        options=dict(switch=dict(type="str", required=True), port=dict(type="int", default=7)),
        build=lambda p: built.append(p) or Lamp(p["switch"]), library=power_registry.Library("lamp-lib", lambda: None),
        states=("powered_on", "query"),
        check=lambda p: "lamp.switch %r is not a switch" % p["switch"] if p["switch"] == "broken" else None))
    yield built
    del power_registry.METHODS["lamp"]


def run(args: dict) -> dict:
    out = io.StringIO()
    with patch_module_args(args), contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        machine_power.main()
    return json.loads(out.getvalue())


def test_a_method_registered_in_one_place_is_run_by_machine_power(lamp):
    result = run({"method": "lamp", "state": "powered_on", "lamp": {"switch": "hall"}, "timeout": 5,
                  "poll_interval": 0.01})
    assert not result.get("failed"), result
    assert (result["previous_state"], result["state"], result["steps"]) == ("off", "on", ["power_on"])
    assert lamp == [{"switch": "hall", "port": 7}]  # its options' defaults were applied by the argument spec


@pytest.mark.parametrize("args, message", [
    ({"method": "lamp", "state": "powered_on"}, "method is lamp but all of the following are missing: lamp"),
    ({"method": "lamp", "state": "reset", "lamp": {"switch": "hall"}},
     "state=reset is not possible with method=lamp; it supports state powered_on, query"),
    ({"method": "lamp", "state": "powered_on", "boot_device": "pxe", "lamp": {"switch": "hall"}},
     "boot_device is not possible with method=lamp; use ipmi or redfish"),
    ({"method": "lamp", "state": "powered_on", "lamp": {"switch": "broken"}}, "lamp.switch 'broken' is not a switch"),
    ({"method": "lamp", "state": "powered_on", "lamp": {"switch": "hall", "port": 0}},
     "lamp.port must be a port number (1-65535), got 0"),
    ({"method": "lamp", "lamp": {"switch": "hall", "bulb": 1}}, "bulb"),
])
def test_a_registered_methods_rules_are_machine_powers(lamp, args, message):
    result = run(args)
    assert result.get("failed") and message in result["msg"], result
    assert not lamp  # refused before any driver was built


def test_a_registered_methods_missing_library_is_named(lamp):
    def absent():
        import lamp_lib_that_is_not_installed  # noqa: F401 pylint: disable=unused-import,import-outside-toplevel
    power_registry.METHODS["lamp"].library = power_registry.Library("lamp-lib", absent)
    result = run({"method": "lamp", "state": "query", "lamp": {"switch": "hall"}})
    assert result.get("failed") and "lamp-lib" in result["msg"], result
    assert not lamp  # no driver built
    with pytest.raises(ImportError, match="lamp-lib is required"):
        power_registry.METHODS["lamp"].library.require()


def child_env() -> dict:
    """This environment, with this interpreter's sys.path: the collection importable as it is here (pytest or
    ansible-test units)."""
    return dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))


LIBRARIES = {"ipmi": "pyghmi", "redfish": "sushy", "ssh": "paramiko", "wol": "wakeonlan"}


@pytest.mark.parametrize("method", sorted(LIBRARIES))
def test_a_module_run_imports_only_the_library_of_its_method(method):
    """pyghmi, sushy and paramiko cost about 0.5 s of CPU together at every module start: machine_power imports
    every protocol file, and a protocol's library only when its method is used (a fresh interpreter, as a
    module run is)."""
    probe = (
        "import sys\n"
        "from ansible_collections.homecluster.infra.plugins.modules import machine_power\n"
        "from ansible_collections.homecluster.infra.plugins.module_utils.power_registry import METHODS\n"
        "before = sorted(p for p in %r if p in sys.modules)\n"
        "assert METHODS[%r].missing_library() is None\n"
        "print(before, sorted(p for p in %r if p in sys.modules))\n"
    ) % (sorted(LIBRARIES.values()), method, sorted(LIBRARIES.values()))
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=child_env(),
                         check=True).stdout
    assert out.split() == ["[]", "['%s']" % LIBRARIES[method]], out


def test_every_protocol_file_registers_itself_and_machine_power_imports_it():
    registering = {}
    for path in sorted((PLUGINS / "module_utils").glob("power_*.py")):
        for name in re.findall(r'register\(Method\(\s*"(\w+)"', path.read_text()):
            registering[name] = path.name
    assert set(registering) == {"ipmi", "redfish", "wol", "ssh"}, registering
    assert list(power_registry.METHODS) == ["ipmi", "redfish", "wol", "ssh"]  # the choices' order, as documented


def code_strings(path: Path) -> set:
    """The string constants of a file's code, leaving out its DOCUMENTATION, EXAMPLES and RETURN texts and
    docstrings."""
    tree = ast.parse(path.read_text())
    docs = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Assign)
            and any(getattr(t, "id", "") in ("DOCUMENTATION", "EXAMPLES", "RETURN") for t in node.targets)}
    docs |= {id(node.body[0].value) for node in ast.walk(tree)
             if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)) and node.body
             and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return {node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs}


@pytest.mark.parametrize("path", ["modules/machine_power.py", "module_utils/power_plan.py",
                                  "module_utils/power_execute.py", "module_utils/power_registry.py"])
def test_no_hand_kept_list_of_methods_is_left(path):
    named = code_strings(PLUGINS / path) & set(power_registry.METHODS)
    assert not named, "%s names the methods %s in its code: take them from power_registry.METHODS" % (path, named)
    assert not re.search(r"METHOD_STATES|_LIBRARIES|BOOT_DEVICE_METHODS", (PLUGINS / path).read_text()), path
