"""ports.HeldPort never holds a port another hold of this process has, whatever number it is handed."""
from __future__ import annotations

from homecluster_lab import ports


def test_a_hold_handed_a_port_another_hold_has_picks_again(monkeypatch):
    first = ports.HeldPort()
    handed = iter([first.port])  # the number the kernel might hand a SO_REUSEPORT bind: already held
    real = ports._unbound_port
    monkeypatch.setattr(ports, "_unbound_port", lambda host: next(handed, None) or real(host))
    second = ports.HeldPort()
    try:
        assert second.port != first.port
        assert (second.host, second.port) in ports._HELD and (first.host, first.port) in ports._HELD
    finally:
        second.close()
        first.close()
    assert (first.host, first.port) not in ports._HELD  # given back on close


def test_holds_are_distinct_and_refuse_a_plain_bind():
    import errno
    import socket
    held = [ports.HeldPort() for _ in range(200)]
    try:
        assert len({h.port for h in held}) == len(held)
        with socket.socket() as other:
            try:
                other.bind(("127.0.0.1", held[0].port))
            except OSError as exc:
                assert exc.errno == errno.EADDRINUSE
            else:
                raise AssertionError("a plain bind took a held port")
    finally:
        for h in held:
            h.close()
