# -*- coding: utf-8 -*-
# Copyright: homecluster maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The power methods machine_power knows, each registered by its own protocol file.

A protocol file (power_ipmi.py, power_redfish.py, ...) ends with ``register(Method(...))``: its name, its
options (the module's argument spec for the method's dict), the states it can serve, whether it can set a
one-time boot device, the library it needs, how it builds its driver and what it checks that an argument spec
cannot express. machine_power builds its method choices, argument spec, required_if, library check, state
check and driver from ``METHODS`` alone, as Metal3's BMC access keeps one registration per BMC type. Adding a
protocol is its file plus its name in machine_power's import of the protocol files (Ansible packs only the
module_utils a module imports by name).
"""
from __future__ import annotations

from ansible.module_utils.basic import missing_required_lib

ALL_STATES = ("powered_on", "powered_off", "forced_off", "reset", "query")

METHODS = {}  # name -> Method, in the order the protocol files were imported


class Method(object):
    """One power method. ``library`` is (available: bool, import traceback or None, pip package name)."""

    def __init__(self, name, options, build, library, states=ALL_STATES, boot_device=False, check=None,
                 required_together=None):
        self.name = name
        self.options = options
        self.build = build  # the method's params (its dict) -> a PowerDriver
        self.library = library
        self.states = tuple(states)
        self.boot_device = boot_device
        self.check = check or (lambda sub: None)  # the method's params -> a message naming the option, or None
        self.required_together = required_together or []

    def argument_spec(self) -> dict:
        spec = dict(type="dict", options=self.options)
        if self.required_together:
            spec["required_together"] = self.required_together
        return spec

    def missing_library(self):
        """(message, traceback) when the method's library is not installed, else None."""
        available, error, package = self.library
        return None if available else (missing_required_lib(package), error)


def register(method: Method) -> Method:
    if method.name in METHODS:
        raise ValueError("power method %r is registered twice" % method.name)
    METHODS[method.name] = method
    return method
