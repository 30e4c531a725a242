"""pytest fixtures for the peers; imported by the conftest files of tests/ansible and tests/unit/plugins."""
from __future__ import annotations

import pytest

from ansible_peers.ipmisim import IpmiSim
from ansible_peers.sshd import SshdPeer
from ansible_peers.sushy import SushyEmulator
from ansible_peers.wol import WolListener


@pytest.fixture
def ipmi_sim(tmp_path):
    sim = IpmiSim(tmp_path / "ipmi").start()
    yield sim
    sim.stop()


@pytest.fixture
def redfish_emulator(tmp_path):
    emulator = SushyEmulator(tmp_path / "redfish", delay=1).start()
    yield emulator
    emulator.stop()


@pytest.fixture
def wol_listener():
    listener = WolListener().start()
    yield listener
    listener.stop()


@pytest.fixture
def sshd_peer(tmp_path):
    peer = SshdPeer(tmp_path / "sshd").start()
    yield peer
    peer.stop()
