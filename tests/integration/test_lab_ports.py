"""The operator must be told its ports; when another process took the one picked, the lab starts it again on new ones.

The first port the lab picks for the provider is held by a squatter: a plain listener (the operator's
gRPC bind fails, "Address already in use"), or a listener with SO_REUSEPORT, as another lab's operator
binds (the operator's bind succeeds and the two share the port's connections, which only the check that
the operator alone listens there finds). Either way the lab must end up with an operator that alone
listens on ports of its own.
"""
from __future__ import annotations

import socket

import pytest

from homecluster_lab import ports
from homecluster_lab.cluster import LabCluster, LabConfig

pytestmark = [pytest.mark.lab, pytest.mark.slow]


@pytest.mark.parametrize("reuseport", [False, True], ids=["plain-squatter", "reuseport-squatter"])
async def test_the_operator_starts_again_on_new_ports_when_its_first_is_taken(tmp_path, monkeypatch, reuseport):
    squatter = socket.socket()
    if reuseport:
        squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    squatter.bind(("127.0.0.1", 0))
    squatter.listen()
    taken = squatter.getsockname()[1]
    picks = []
    real_pick = ports.program_port

    def pick(host: str = "127.0.0.1") -> int:
        picks.append(taken if not picks else real_pick(host))  # the first pick loses the race
        return picks[-1]

    monkeypatch.setattr(ports, "program_port", pick)
    cfg = LabConfig(slots=1, driver="ipmi", provider_address="127.0.0.1:0", workdir=tmp_path / "lab",
                    require_operator=True)
    with squatter:
        async with LabCluster(cfg) as lab:
            port = int(lab.provider_address.rsplit(":", 1)[1])
            assert port != taken and len(picks) == 4, (picks, lab.provider_address)  # two starts, two ports each
            assert ports.listens(lab.operator.pid, port)
            webhook = int(lab.operator.options.webhook_address.rsplit(":", 1)[1])
            assert ports.listens(lab.operator.pid, webhook)
