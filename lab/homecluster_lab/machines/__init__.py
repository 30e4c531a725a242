"""The lab's simulated machines: power state and boot model, real BMC endpoints, and a kubelet.

- machine.py / boot.py: a SimMachine, its fault knobs and its pure boot model
- ipmi.py, redfish.py, wol.py, ssh.py: real protocol endpoints on loopback
- kubelet.py / node_manifest.py: the corev1 Node and Lease a booted machine keeps up to date
- fleet.py: start a set of machines from a spec and get the endpoints their slots need
"""
