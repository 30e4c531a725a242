"""The lab: everything needed to try homecluster on one machine, without a cluster or real hardware.

- `apiserver`: an in-memory Kubernetes API server that kubectl, kopf and the official clients talk to.
- `machines`: simulated (and tiny qemu) machines that answer IPMI / Redfish / Wake-on-LAN on loopback.
- `executor`: runs lifecycle Jobs' commands locally, as a kubelet would.

The lab exists so the integration tests exercise real protocols end to end. It must therefore behave like
the real thing wherever clients depend on it: when the lab lies, the tests lie.
"""
