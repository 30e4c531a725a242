"""Bad input, tried in bulk, on the modules' arguments (issue 14): random arguments for machine_power,
node_cordon and node_drain through each module's real main() -- its argument spec and its own checks --
up to where it would contact a machine or the API server (module_run).

Invariants: no traceback (the module ends with its JSON answer or goes on to do its work); a failure names
the option it refuses; a password never appears in what the module prints; and arguments it accepts are
ones the rest of the module can use (finite, positive intervals; a node name).
"""
from __future__ import annotations

import math
import re

import pytest

pytest.importorskip("hypothesis")  # the ansible-core lines' unit runs (test_ansible_core_lines.py) go without it
from hypothesis import HealthCheck, example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from module_run import run  # noqa: E402

EXAMPLES = 150
PROPERTY = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow])
SECRET = "Pw-0f9e2c7a51d3"  # a password no other generated value can contain

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-2**70, 2**70), st.sampled_from([0, -1, 1, 65535, 65536, 10**30]),
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from(["nan", "inf", "-inf", "1e400", "0", "-5"]),
    st.text(max_size=40), st.sampled_from(["", " ", "{{ lookup('env', 'HOME') }}", "%s%d", "52:54:00:12:34:56"]))
values = st.one_of(scalars, st.lists(scalars, max_size=3), st.dictionaries(st.text(max_size=8), scalars, max_size=3))


def _options(required: dict, optional: dict, extra: bool = True) -> st.SearchStrategy[dict]:
    """Each option present or not, with a plausible or a random value; sometimes an unknown option."""
    fixed = st.fixed_dictionaries(dict(required), optional=dict(optional))
    if not extra:
        return fixed
    return st.builds(lambda d, junk: {**junk, **d}, fixed,
                     st.dictionaries(st.sampled_from(["bogus", "passwd", "node"]), values, max_size=1))


def _either(plausible: st.SearchStrategy) -> st.SearchStrategy:
    return st.one_of(plausible, values)


secret = st.just(SECRET)
ports = _either(st.integers(-5, 70000))
ipmi = _options({"address": _either(st.just("10.0.0.5")), "username": _either(st.just("admin")),
                 "password": secret}, {"port": ports})
redfish = _options({"endpoint": _either(st.just("https://bmc.example:8000")), "username": _either(st.just("root")),
                    "password": secret}, {"system_id": values, "verify_tls": _either(st.booleans())})
wol = _options({"mac_address": _either(st.sampled_from(["52:54:00:12:34:56", "52-54-00-12-34-56", "zz"]))},
               {"broadcast_address": values, "port": ports, "check_host": values, "check_port": ports})
ssh = _options({"host": _either(st.just("10.0.0.6")), "private_key_file": _either(st.just("/nonexistent/key"))},
               {"port": ports, "user": values, "command": values, "force_command": values,
                "known_hosts_file": values})
seconds = _either(st.integers(-10, 10**6))
intervals = _either(st.floats(-1, 1e6))

POWER = st.builds(lambda d, method_block: {**d, **method_block},
                  _options({"method": _either(st.sampled_from(["ipmi", "redfish", "wol", "ssh"]))},
                           {"state": _either(st.sampled_from(["powered_on", "powered_off", "forced_off", "reset",
                                                              "query"])),
                            "timeout": seconds, "graceful_timeout": seconds, "poll_interval": intervals}),
                  st.fixed_dictionaries({}, optional={"ipmi": _either(ipmi), "redfish": _either(redfish),
                                                      "wol": _either(wol), "ssh": _either(ssh)}))
names = _either(st.sampled_from(["worker-01", "w1.lab"]))
KUBE = {"kubeconfig": values, "context": values}
CORDON = _options({"name": names}, {"state": _either(st.sampled_from(["cordoned", "uncordoned"])),
                                    "mark": _either(st.booleans()), "only_if_marked": _either(st.booleans()),
                                    "fail_on_refusal": _either(st.booleans()), **KUBE})
DRAIN = _options({"name": names}, {"timeout": seconds, "grace_period": seconds, "retry_interval": intervals,
                                   "delete_emptydir_data": _either(st.booleans()), "force": _either(st.booleans()),
                                   **KUBE})
OPTIONS = {
    "machine_power": {"state", "method", "ipmi", "redfish", "wol", "ssh", "timeout", "graceful_timeout",
                      "poll_interval", "address", "port", "username", "password", "endpoint", "system_id",
                      "verify_tls", "mac_address", "broadcast_address", "check_host", "check_port", "host", "user",
                      "private_key_file", "command", "force_command", "known_hosts_file"},
    "node_cordon": {"name", "state", "mark", "only_if_marked", "fail_on_refusal", "kubeconfig", "context"},
    "node_drain": {"name", "timeout", "grace_period", "retry_interval", "delete_emptydir_data", "force",
                   "kubeconfig", "context"},
}
NODE_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def check(module: str, args: dict) -> None:
    outcome = run(module, args)  # any exception other than the module's own exit is a traceback: the test fails
    assert SECRET not in outcome.output, f"{module} printed the password: {outcome.output[:500]}"
    if outcome.accepted:
        check_accepted(module, outcome.params)
        return
    result = outcome.result
    assert result.get("failed") and isinstance(result.get("msg"), str), result
    mentioned = set(re.findall(r"[a-z_]+", result["msg"])) & (OPTIONS[module] | {"parameters"})
    assert mentioned, f"{module}: the failure names no option: {result['msg']}"


def check_accepted(module: str, p: dict) -> None:
    """What the module goes on to use must be usable: no NaN/infinite waits, no empty node name."""
    for key in ("poll_interval", "retry_interval"):
        if key in p:
            assert math.isfinite(p[key]) and 0 < p[key] <= p["timeout"], f"{module} accepted {key}={p[key]}"
    if "name" in p:
        assert len(p["name"]) <= 253 and NODE_NAME.match(p["name"]), f"{module} accepted name={p['name']!r}"


@PROPERTY
@given(args=POWER)
@example(args={"method": "ssh", "poll_interval": "nan", "ssh": {"host": "h", "private_key_file": "/k"}})
@example(args={"method": "ssh", "poll_interval": "inf", "ssh": {"host": "h", "private_key_file": "/k"}})
@example(args={"method": "ipmi", "ipmi": {"address": "a", "username": "u", "password": SECRET, "port": SECRET}})
@example(args={"method": "ipmi", "ipmi": False})
@example(args={"method": "wol", "wol": 7, "ssh": "nan"})
@example(args={"method": "ipmi", "graceful_timeout": "inf"})
@example(args={"method": "ipmi", "ipmi": {"address": "a", "username": "u", "password": SECRET, "port": "-inf"}})
def test_random_machine_power_arguments(args):
    check("machine_power", args)


@PROPERTY
@given(args=CORDON)
@example(args={"name": ""})
@example(args={"name": "Not A Node/../x"})
def test_random_node_cordon_arguments(args):
    check("node_cordon", args)


@PROPERTY
@given(args=DRAIN)
@example(args={"name": "w1", "retry_interval": "nan"})
@example(args={"name": "w1", "retry_interval": "inf"})
@example(args={"name": "w1", "timeout": 5, "retry_interval": 1e9})
@example(args={"name": ""})
@example(args={"name": "w1", "timeout": "inf"})
def test_random_node_drain_arguments(args):
    check("node_drain", args)


@pytest.mark.parametrize("module, args, option", [
    ("node_drain", {"name": "w1", "retry_interval": "nan"}, "retry_interval"),
    ("node_drain", {"name": "", "timeout": 5}, "name"),
    ("node_cordon", {"name": "x" * 300}, "name"),
    ("machine_power", {"method": "ssh", "poll_interval": "inf", "ssh": {"host": "h", "private_key_file": "/k"}},
     "poll_interval"),
    # ansible-core's own checks raised TypeError / OverflowError on these (a traceback, not a failure)
    ("machine_power", {"method": "ipmi", "ipmi": False}, "ipmi"),
    ("machine_power", {"method": "wol", "wol": {"mac_address": "52:54:00:12:34:56"}, "graceful_timeout": "inf"},
     "graceful_timeout"),
    ("machine_power", {"method": "ipmi", "ipmi": {"address": "a", "username": "u", "password": SECRET,
                                                  "port": "inf"}}, "ipmi.port"),
    ("node_drain", {"name": "w1", "timeout": "-inf"}, "timeout"),
])
def test_found_defects_are_refused_naming_the_option(module, args, option):
    """The defects the properties found, as plain regression tests."""
    outcome = run(module, args)
    assert not outcome.accepted and option in outcome.result["msg"], outcome


@pytest.mark.parametrize("module, args", [
    ("machine_power", {"method": "ipmi", "ipmi": {"address": "10.0.0.5", "username": "admin", "password": SECRET}}),
    ("machine_power", {"method": "ssh", "poll_interval": 0.5, "ssh": {"host": "10.0.0.6", "private_key_file": "/k"}}),
    ("node_cordon", {"name": "worker-01", "state": "uncordoned", "mark": True}),
    ("node_drain", {"name": "w1.lab", "timeout": 60, "retry_interval": 2.5}),
])
def test_good_arguments_are_still_accepted(module, args):
    assert run(module, args).accepted
