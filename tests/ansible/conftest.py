"""Fixtures and helpers for the tests that drive ansible-playbook, ansible-runner, molecule,
ansible-test and ansible-lint against the collection."""
from __future__ import annotations

import pytest
from ansible_peers.fixtures import ipmi_sim, redfish_emulator, sshd_peer, wol_listener  # noqa: F401  pylint: disable=unused-import
from hc_ansible import collection_ready


@pytest.fixture(scope="session", autouse=True)
def _collection_link():
    collection_ready()
