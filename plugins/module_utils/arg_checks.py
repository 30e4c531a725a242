# -*- coding: utf-8 -*-
# Copyright: homecluster maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checks of module arguments that an argument_spec cannot express (pure).

Each returns None when the value is usable, else a message naming the option and the fix. Ansible's
float type turns "nan" and "inf" into floats, and a NaN compares false with everything: an interval of
NaN passed "<= 0" and later made time.sleep raise; an infinite one waited forever.

CheckedModule also guards two crashes inside ansible-core's own argument checks (a traceback instead of
a failure naming the option): an option with sub-options given a boolean or number, and an int option
given "inf" (OverflowError). It removes such values before ansible-core sees them and says why.
"""
from __future__ import annotations

import decimal
import math
import re

from ansible.module_utils.basic import AnsibleModule

# a Node's metadata.name: a DNS subdomain (RFC 1123), as the API server requires
_NODE_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
MAX_NODE_NAME = 253


def interval_problem(option, value, timeout):
    """An interval between polls or retries must be finite, above zero and at most `timeout` seconds."""
    if not math.isfinite(value) or value <= 0 or value > timeout:
        return "%s must be a number of seconds above 0 and at most timeout (%d), got %s" % (option, timeout, value)
    return None


def node_name_problem(name):
    """`name` must be a Kubernetes Node name; the message shows at most 80 characters of it."""
    if len(name) > MAX_NODE_NAME or not _NODE_NAME.match(name):
        shown = name if len(name) <= 80 else name[:80] + "..."
        return ("name %r is not a Kubernetes Node name: use the Node's metadata.name (lowercase letters, digits, "
                "'-' and '.', at most %d characters)" % (shown, MAX_NODE_NAME))
    return None


MAX_SELECTOR = 1024


def selectors_problem(option, selectors):
    """Each of a list of label or field selectors must be a non-empty string of at most MAX_SELECTOR characters
    (the API server parses it; an empty one would silently select every pod)."""
    for selector in selectors or []:
        if not selector.strip() or len(selector) > MAX_SELECTOR:
            shown = selector if len(selector) <= 80 else selector[:80] + "..."
            return ("%s: %r is not a selector: give a non-empty selector of at most %d characters (e.g. app=web), "
                    "or leave the option out" % (option, shown, MAX_SELECTOR))
    return None


def drop_non_dicts(params, names):
    """Remove each of `names` whose value is no dictionary of sub-options; return a message naming the first.

    For an option with sub-options, ansible-core's own check names no option ("dictionary requested, could
    not parse JSON or key=value"), and a boolean or number there made it raise TypeError (a traceback, not
    a failure). A string that parses as key=value or JSON is left to ansible-core; the value is never shown.
    """
    from ansible.module_utils.common.validation import check_type_dict

    problem = None
    for name in names:
        value = params.get(name)
        if value is None or isinstance(value, dict):
            continue
        if isinstance(value, str):
            try:
                check_type_dict(value)
                continue
            except (TypeError, ValueError):
                pass
        del params[name]
        problem = problem or ("%s must be a dictionary of its sub-options (e.g. %s: {...} in YAML), got a %s"
                              % (name, name, type(value).__name__))
    return problem


def _infinite(value):
    if isinstance(value, bool) or not isinstance(value, (str, float)):
        return False
    try:
        return decimal.Decimal(str(value).strip()).is_infinite()
    except (decimal.InvalidOperation, ValueError):
        return False


def drop_infinite_ints(params, spec, prefix=""):
    """Remove int options (and int sub-options) given infinity; return a message naming the first."""
    problem = None
    for name, option in spec.items():
        value = params.get(name)
        if option.get("type") == "int" and _infinite(value):
            del params[name]
            problem = problem or "%s%s must be a whole number, got infinity" % (prefix, name)
        elif option.get("options") and isinstance(value, dict):
            problem = drop_infinite_ints(value, option["options"], prefix + name + ".") or problem
    return problem


class CheckedModule(AnsibleModule):
    """AnsibleModule whose raw arguments are first cleared of values that crash ansible-core's checks;
    `problem` names the first one removed (the module fails with it)."""

    problem = None

    def _load_params(self):
        super()._load_params()
        if isinstance(self.params, dict):
            with_options = [name for name, option in self.argument_spec.items() if option.get("options")]
            self.problem = (drop_non_dicts(self.params, with_options)
                            or drop_infinite_ints(self.params, self.argument_spec))
