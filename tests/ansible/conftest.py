"""Fixtures and helpers for the tests that drive ansible-playbook, ansible-runner, molecule,
ansible-test and ansible-lint against the collection."""
from __future__ import annotations

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
if str(_HERE) not in sys.path:
    sys.path.insert(0, str(_HERE))

from ansible_peers.fixtures import ipmi_sim, redfish_emulator, sshd_peer, wol_listener  # noqa: E402,F401  pylint: disable=unused-import
from hc_ansible import collection_ready  # noqa: E402

import pytest  # noqa: E402


@pytest.fixture(scope="session", autouse=True)
def _collection_link():
    collection_ready()
