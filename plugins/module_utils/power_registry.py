# -*- coding: utf-8 -*-
# Copyright: homecluster maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The power methods machine_power knows, each registered by its own protocol file.

A protocol file (power_ipmi.py, power_redfish.py, ...) ends with ``register(Method(...))``: its name, its
options (the module's argument spec for the method's dict), the states it can serve, whether it can set a
one-time boot device, the library it needs, how it builds its driver and what it checks that an argument spec
cannot express. A protocol's library is imported when its method is used, not when its file is: one module
run pays for one library (all four together cost about 0.4 s of CPU at every start).
machine_power builds its method choices, argument spec, required_if, library check, state
check and driver from ``METHODS`` alone, as Metal3's BMC access keeps one registration per BMC type. Adding a
protocol is its file plus its name in machine_power's import of the protocol files (Ansible packs only the
module_utils a module imports by name).
"""
from __future__ import annotations

import traceback

from ansible.module_utils.basic import missing_required_lib

ALL_STATES = ("powered_on", "powered_off", "forced_off", "reset", "query")

METHODS = {}  # name -> Method, in the order the protocol files were imported


class Library(object):
    """A protocol's third-party library, imported on first use by ``load`` (a function of the protocol's file
    that imports it into that file's globals; ImportError when it is not installed)."""

    def __init__(self, package, load):
        self.package = package  # what `pip install` takes
        self._load = load
        self._missing = None  # None: not tried yet; False: imported; else the import's traceback

    def missing(self):
        """None once the library is imported, else the traceback of the failed import."""
        if self._missing is None:
            try:
                self._load()
                self._missing = False
            except ImportError:
                self._missing = traceback.format_exc()
        return self._missing or None

    def require(self):
        """Import the library now (a driver's constructor calls this); ImportError naming the package if absent."""
        if self.missing():
            raise ImportError("%s is required: %s" % (self.package, missing_required_lib(self.package)))


class Method(object):
    """One power method. ``library`` is its Library."""

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
        """(message, traceback) when the method's library is not installed, else None. Imports it."""
        error = self.library.missing()
        return None if error is None else (missing_required_lib(self.library.package), error)


def register(method: Method) -> Method:
    if method.name in METHODS:
        raise ValueError("power method %r is registered twice" % method.name)
    METHODS[method.name] = method
    return method
