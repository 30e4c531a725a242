#!/usr/bin/env bash
# Install the Debian packages the lab and the tests use, only those that are missing.
#   ipmitool, openipmi (ipmi_sim)  - independent IPMI peers
#   qemu-system-x86, busybox-static, dropbear-bin, cpio - the tiny VMs of the lab
#   openssh-client, openssh-server - SSH power-off against real sshd
#   curl - Redfish checks
set -euo pipefail
PACKAGES=(ipmitool openipmi qemu-system-x86 busybox-static dropbear-bin cpio openssh-client openssh-server curl)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "installing Debian packages: ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
if ! command -v kubectl >/dev/null; then
  echo "warning: kubectl is not on PATH; the kubectl tests will be skipped (install kubectl >= 1.30)" >&2
fi
