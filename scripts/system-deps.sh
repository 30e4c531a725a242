#!/usr/bin/env bash
# Install the Debian packages the lab and the tests use, only those that are missing.
#   git (git http-backend) - the GitOps lab serves its pool repository to Flux over smart HTTP
#   ipmitool, openipmi (ipmi_sim)  - independent IPMI peers
#   qemu-system-x86, busybox-static, dropbear-bin, cpio - the tiny VMs of the lab
#   kmod (depmod), binutils (readelf) - the VM image builder
#   openssh-client, openssh-server - SSH power-off against real sshd
#   curl - Redfish checks;  procps (pgrep) - the VM molecule scenarios;  file - is busybox static (realnode tests)
#   python3-venv - `python3 -m venv` (Debian ships ensurepip separately)
#   zsh, fish - the shell completion scripts of `homecluster completion` are loaded by the real shells
#   prometheus (promtool) - `promtool check rules` / `promtool test rules` on the alerts
#   stress-ng - `make test-under-load`: competing CPU workers, to prove the suite holds on a busy machine
#   mmdebstrap, buildah, umoci - `make images` (scripts/build-images.sh); runc - tests/containers run the images
#   containerd (ctr), containernetworking-plugins, iptables, conntrack, iproute2, mount - the lab's real node (docs/lab.md)
# tests/install/test_system_deps.py checks that every program the code, the tests, the Makefile and
# this script run comes from a package listed here (or from Python, the venv or the base system).
# kubectl is the one program Debian 12 cannot provide at a usable version: it is checked, not installed.
set -euo pipefail
PACKAGES=(git ipmitool openipmi qemu-system-x86 busybox-static file dropbear-bin cpio kmod binutils openssh-client openssh-server curl procps python3-venv zsh fish prometheus stress-ng mmdebstrap buildah umoci runc containerd containernetworking-plugins iptables conntrack iproute2 mount)
KUBECTL_MIN_MINOR=30
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  echo "installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# The lab's API server is driven with kubectl by the tests and by people; Debian 12's kubernetes-client
# is kubectl 1.20, too old, so kubectl is not installed from here.
how="install kubectl >= 1.$KUBECTL_MIN_MINOR from https://kubernetes.io/docs/tasks/tools/install-kubectl-linux/"
if ! command -v kubectl >/dev/null; then
  echo "error: kubectl is not on PATH; the tests and the lab's how-to run it. Debian 12 has no usable kubectl: $how" >&2
  exit 1
fi
minor=$(kubectl version --client -o json 2>/dev/null | sed -n 's/.*"minor": *"\([0-9]*\).*/\1/p' | head -n 1)
if [ -z "$minor" ] || [ "$minor" -lt "$KUBECTL_MIN_MINOR" ]; then
  echo "error: $(command -v kubectl) is kubectl 1.${minor:-?}; the tests need 1.$KUBECTL_MIN_MINOR or newer: $how" >&2
  exit 1
fi
