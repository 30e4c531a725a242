"""The lab: everything needed to try homecluster on one machine, without a cluster or real hardware.

- `apiserver`: an in-memory Kubernetes API server that kubectl, kopf and the official clients talk to.
- `machines`: simulated (and tiny qemu) machines that answer IPMI / Redfish / Wake-on-LAN on loopback.
- `node`: the one kubelet every simulated node runs (a pool machine, a VM, the runner), and the client it speaks.
- `executor`: runs lifecycle Jobs' commands locally, as a kubelet would.
- `labapi`: the interface both API servers (in memory, real) give the lab.
- `crdcheck`: the CRDs' schemas and CEL rules applied as kube-apiserver applies them (the API server's validator).
- `provider`: a cache fed by list+watch and the operator's own claim writer, for the provider without the operator.
- `vm`, `k8s`: tiny qemu machines; the real control plane built from lab/k8s.

A distribution of its own (homecluster-lab, lab/pyproject.toml) so the operator ships none of it; it adds
`homecluster lab` and `homecluster vm-image` to the operator's command (commands.py).

The lab exists so the integration tests exercise real protocols end to end. It must therefore behave like
the real thing wherever clients depend on it: when the lab lies, the tests lie.
"""
