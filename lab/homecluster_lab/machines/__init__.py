"""The lab's simulated machines: power state and boot model, real BMC endpoints; node/ is their kubelet.

- machine.py / boot.py: a SimMachine, its fault knobs and its pure boot model
- ipmi.py, redfish.py, wol.py, ssh.py: real protocol endpoints on loopback
- its kubelet is the lab's one (homecluster_lab.node): the corev1 Node and Lease a booted machine keeps up to date
- fleet.py: start a set of machines from a spec and get the endpoints their slots need
"""
