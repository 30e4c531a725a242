"""Tiny real virtual machines for the lab.

A lab VM is a qemu process (software emulation, 128 MB) booting Debian's cloud kernel and an
initramfs of busybox + dropbear that we assemble from Debian packages (`image`). Its power is
real: the qemu process exists or it does not. Fronts put real management protocols in front of
that power: OpenIPMI's ipmi_sim (`ipmi_front`), a Wake-on-LAN listener (`wol_front`), a Redfish
service (`redfish_front`) and the guest's own sshd (power-off with `poweroff -f`).
`machine.VmMachine` puts one VM and its fronts together for the lab.
"""
