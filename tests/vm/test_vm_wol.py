"""A Wake-on-LAN magic packet (sent with the wakeonlan package) powers on the VM with that MAC."""
from __future__ import annotations

import time

import pytest
from support.waits import poll
from wakeonlan import wake

from homecluster_lab.vm.wol_front import WolFront

pytestmark = pytest.mark.vm


async def test_magic_packet_starts_only_the_named_vm(vms):
    target = vms.vm("slot-wol")
    other = vms.vm("slot-wol-other")
    front = WolFront([target, other]).start()
    try:
        wake("52:54:00:00:00:01", host="127.0.0.1", port=front.port)  # nobody's MAC
        time.sleep(0.3)
        assert not target.is_running() and not other.is_running()

        wake(target.spec.mac, host="127.0.0.1", port=front.port)
        assert await poll(lambda: front.woken == ["slot-wol"], 5), f"magic packet did not start the VM: {front.errors}"
        assert target.is_running() and not other.is_running()
        assert target.wait_for_marker(vms.boot_timeout), target.serial_text()[-2000:]

        wake(target.spec.mac, host="127.0.0.1", port=front.port)  # already on: no change
        time.sleep(0.3)
        assert front.woken == ["slot-wol"]
    finally:
        front.stop()
