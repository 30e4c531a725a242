"""GitOps on the lab's real control plane: a Git repository of the pool served on loopback and the real Flux
(source-controller, kustomize-controller, built by `make flux`) applying it. See docs/gitops.md."""
