"""The images `make images` built, run as containers (runc). The simulated BMCs of tests/ansible are the peers."""
from __future__ import annotations

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
for where in (_HERE, _HERE.parent / "ansible"):
    if str(where) not in sys.path:
        sys.path.insert(0, str(where))

from ansible_peers.fixtures import ipmi_sim  # noqa: E402,F401  pylint: disable=unused-import
