"""Real protocol peers on loopback for the collection's tests.

Each peer is an independent implementation of the protocol the module speaks:
OpenIPMI's ipmi_sim (IPMI), sushy-tools' emulator (Redfish), OpenSSH's sshd (SSH power-off),
and a small UDP listener that decodes Wake-on-LAN magic packets. Every peer binds to
127.0.0.1 on a port the kernel chooses, keeps its state in its own temporary directory,
and is stopped by its fixture.
"""
