"""The images `make images` built, run as containers (runc). The simulated BMCs of tests/ansible are the peers."""
from __future__ import annotations

from ansible_peers.fixtures import ipmi_sim  # noqa: F401  pylint: disable=unused-import
