"""Makes the collection and the loopback peers importable for the module_utils unit tests.

Under ``ansible-test units`` the collection is already importable; under plain pytest the
collection link build/collections (``make collection``) is put on sys.path.
"""
from __future__ import annotations

import sys
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[3]
# A copy of the collection made for ansible-test names the work tree's peers in this file.
_POINTER = Path(__file__).with_name("peers_path.txt")
_PEERS = Path(_POINTER.read_text().strip()) if _POINTER.exists() else _ROOT / "tests" / "ansible"
for _path in (_PEERS, _ROOT / "build" / "collections"):
    if str(_path) not in sys.path and _path.exists():
        sys.path.insert(0, str(_path))

from ansible_peers.fixtures import ipmi_sim, redfish_emulator, sshd_peer, wol_listener  # noqa: E402,F401  pylint: disable=unused-import
