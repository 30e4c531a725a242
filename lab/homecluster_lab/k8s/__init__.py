"""The real Kubernetes control plane on loopback: etcd, kube-apiserver, kube-controller-manager and
kube-scheduler, built from lab/k8s (`make k8s`) and started the way envtest starts them.

binaries.py finds the built programs, pki.py makes the certificates, keys and kubeconfigs, flags.py
says (purely) how each program is started, process.py runs one of them, controlplane.py starts and
stops the four in order. See docs/lab.md, "The real control plane".
"""
