"""Run a module's main() in this process with given arguments, up to the point where it would do I/O.

The module's argument spec (AnsibleModule) and its own checks run for real; the first call that would
reach a machine or an API server (machine_power's build_driver, the kube modules' kube_client.core_api)
is replaced by one that stops the run (a stand-in: these tests are about arguments, and random arguments
must not send power commands). Imported by the tests as `module_run`.
"""
from __future__ import annotations

import contextlib
import inspect
import io
import json
from dataclasses import dataclass
from importlib import import_module
from typing import Any
from unittest import mock

from ansible.module_utils import basic

try:
    from ansible.module_utils.testing import patch_module_args
except ImportError:  # ansible-core before 2.19 reads the arguments from basic._ANSIBLE_ARGS alone
    @contextlib.contextmanager
    def patch_module_args(args: dict[str, Any]):
        with mock.patch.object(basic, "_ANSIBLE_ARGS", json.dumps({"ANSIBLE_MODULE_ARGS": args}).encode()):
            yield

PACKAGE = "ansible_collections.homecluster.infra.plugins"
# where each module would first do I/O: (object to patch, attribute)
IO_BOUNDARY = {
    "machine_power": ("modules.machine_power", "build_driver"),
    "node_cordon": ("module_utils.kube_client", "core_api"),
    "node_drain": ("module_utils.kube_client", "core_api"),
}


class ReachedIO(Exception):
    """The arguments were accepted: the module went on to contact the outside world."""


@dataclass
class Outcome:
    accepted: bool           # reached the I/O boundary
    params: dict[str, Any]   # module.params as main() held them there (after the argument spec)
    result: dict[str, Any]   # the module's JSON answer when it ended before that
    output: str              # everything it printed


def run(module_name: str, args: dict[str, Any]) -> Outcome:
    module = import_module(f"{PACKAGE}.modules.{module_name}")
    where, attribute = IO_BOUNDARY[module_name]
    target = import_module(f"{PACKAGE}.{where}")
    out = io.StringIO()

    seen: dict[str, Any] = {}

    def stop(*_a: Any, **_k: Any) -> None:
        seen.update(inspect.currentframe().f_back.f_locals["module"].params)
        raise ReachedIO()

    with patch_module_args(args), mock.patch.object(target, attribute, stop), contextlib.redirect_stdout(out):
        try:
            module.main()
        except ReachedIO:
            return Outcome(True, seen, {}, out.getvalue())
        except SystemExit:
            pass
    text = out.getvalue()
    return Outcome(False, {}, json.loads(text), text)
