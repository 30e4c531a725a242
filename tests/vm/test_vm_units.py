"""Pure parts of the VM builder and fronts, on fixed inputs (no qemu, no apt)."""
from __future__ import annotations

from pathlib import Path

import pytest

from homecluster_lab.vm import debian, elf, guest_init, image, kmod
from homecluster_lab.vm.ipmi_front import render_lan_conf
from homecluster_lab.vm.qemu import VmSpec, mac_for, normalize_mac
from homecluster_lab.vm.wol_front import magic_packet_mac

SHOW = """Package: linux-image-cloud-amd64
Version: 6.1.192-3
Architecture: amd64
Depends: linux-image-6.1.0-57-cloud-amd64 (= 6.1.192-3)

Package: dropbear-bin
Version: 2022.83-1+deb12u3
Architecture: amd64
Depends: libc6 (>= 2.34), libcrypt1 (>= 1:4.1.0), libtomcrypt1 (>= 1.18.2),
 zlib1g (>= 1:1.1.4), adduser | passwd

Package: libtomcrypt1
Version: 1.18.2-6
Architecture: amd64
Depends: libc6 (>= 2.14), libgmp10 (>= 2:6.2.1+dfsg1)

Package: busybox-static
Version: 1:1.35.0-4+deb12u1+b1
Architecture: amd64
"""

MODULES_DEP = """kernel/drivers/virtio/virtio.ko:
kernel/drivers/virtio/virtio_ring.ko:
kernel/drivers/virtio/virtio_pci_legacy_dev.ko:
kernel/drivers/virtio/virtio_pci_modern_dev.ko:
kernel/drivers/virtio/virtio_pci.ko: kernel/drivers/virtio/virtio_pci_legacy_dev.ko kernel/drivers/virtio/virtio_pci_modern_dev.ko kernel/drivers/virtio/virtio_ring.ko kernel/drivers/virtio/virtio.ko
kernel/net/core/failover.ko:
kernel/drivers/net/net_failover.ko: kernel/net/core/failover.ko
kernel/drivers/net/virtio_net.ko: kernel/drivers/net/net_failover.ko kernel/net/core/failover.ko kernel/drivers/virtio/virtio_ring.ko kernel/drivers/virtio/virtio.ko
kernel/fs/ext4/ext4.ko.xz: kernel/fs/jbd2/jbd2.ko.xz
"""


def test_parse_show_reads_versions_depends_and_file_names():
    found = debian.parse_show(SHOW)
    assert found["busybox-static"].version == "1:1.35.0-4+deb12u1+b1"
    assert found["busybox-static"].deb_filename == "busybox-static_1%3a1.35.0-4+deb12u1+b1_amd64.deb"
    # continuation lines are joined; of "adduser | passwd" only the first alternative counts
    assert found["dropbear-bin"].depends == ("libc6", "libcrypt1", "libtomcrypt1", "zlib1g", "adduser")


def test_kernel_package_is_the_meta_packages_versioned_dependency():
    found = debian.parse_show(SHOW)
    name = debian.kernel_package(found["linux-image-cloud-amd64"])
    assert name == "linux-image-6.1.0-57-cloud-amd64"
    assert debian.kernel_release(name) == "6.1.0-57-cloud-amd64"
    with pytest.raises(ValueError, match="apt-get update"):
        debian.kernel_package(debian.PackageInfo("linux-image-cloud-amd64", "1", "amd64", ("kmod",)))


def test_library_closure_follows_library_packages_only():
    found = debian.parse_show(SHOW)
    closure = debian.library_closure("dropbear-bin", found)
    assert closure == ["libc6", "libcrypt1", "libtomcrypt1", "zlib1g", "libgmp10"]
    assert "adduser" not in closure


def test_module_load_order_puts_dependencies_first_once_each():
    order = kmod.load_order(MODULES_DEP)
    names = [kmod.module_name(p) for p in order]
    assert sorted(names) == sorted(["virtio_pci_legacy_dev", "virtio_pci_modern_dev", "virtio_ring", "virtio",
                                    "virtio_pci", "failover", "net_failover", "virtio_net"])
    for module, deps in (("virtio_pci", ["virtio", "virtio_ring"]), ("virtio_net", ["net_failover", "failover"]),
                         ("net_failover", ["failover"])):
        assert all(names.index(d) < names.index(module) for d in deps), (module, names)
    assert kmod.module_name("kernel/fs/ext4/ext4.ko.xz") == "ext4"


def test_missing_module_is_named():
    with pytest.raises(ValueError, match="virtio_net"):
        kmod.load_order("kernel/drivers/virtio/virtio.ko:\n", ("virtio_net",))


def test_elf_parsers():
    dynamic = """ 0x0000000000000001 (NEEDED)             Shared library: [libtomcrypt.so.1]
 0x0000000000000001 (NEEDED)             Shared library: [libc.so.6]
 0x000000000000000c (INIT)               0x4000"""
    assert elf.parse_needed(dynamic) == ["libtomcrypt.so.1", "libc.so.6"]
    headers = "      [Requesting program interpreter: /lib64/ld-linux-x86-64.so.2]"
    assert elf.parse_interpreter(headers) == "/lib64/ld-linux-x86-64.so.2"
    assert elf.parse_interpreter("static") is None


def test_cache_key_changes_with_each_input(monkeypatch):
    base = image.cache_key({"busybox-static": "1"}, "ssh-ed25519 AAA")
    assert base == image.cache_key({"busybox-static": "1"}, "ssh-ed25519 AAA\n")
    assert base != image.cache_key({"busybox-static": "2"}, "ssh-ed25519 AAA")
    assert base != image.cache_key({"busybox-static": "1"}, "ssh-ed25519 BBB")
    monkeypatch.setattr(guest_init, "INIT_SCRIPT", guest_init.INIT_SCRIPT + "# changed\n")
    assert base != image.cache_key({"busybox-static": "1"}, "ssh-ed25519 AAA")
    monkeypatch.undo()
    monkeypatch.setattr(image, "BUILDER_VERSION", "999")
    assert base != image.cache_key({"busybox-static": "1"}, "ssh-ed25519 AAA")


def test_init_script_reads_the_slot_and_hang_knob_and_prints_the_marker():
    script = guest_init.INIT_SCRIPT
    assert "homecluster.slot=*" in script and "homecluster.hang=*" in script
    assert f'echo "{guest_init.BOOT_MARKER} slot=$slot"' in script
    # the hang branch comes before networking and never reaches the marker
    assert script.index("homecluster.hang=1") < script.index("ip link set eth0 up")
    assert guest_init.BOOT_MARKER not in guest_init.HANG_MARKER


def _magic(mac: bytes, repeats: int = 16) -> bytes:
    return b"\xff" * 6 + mac * repeats


def test_magic_packet_accepts_102_and_126_bytes_and_rejects_others():
    mac = bytes.fromhex("525400abcdef")
    assert magic_packet_mac(_magic(mac)) == "52:54:00:ab:cd:ef"
    assert len(_magic(mac, 20)) == 126 and magic_packet_mac(_magic(mac, 20)) == "52:54:00:ab:cd:ef"
    assert magic_packet_mac(_magic(mac) + b"pass") == "52:54:00:ab:cd:ef"  # SecureOn password
    assert magic_packet_mac(_magic(mac)[:-1]) is None
    assert magic_packet_mac(b"\x00" + _magic(mac)[1:]) is None
    broken = bytearray(_magic(mac))
    broken[50] ^= 1
    assert magic_packet_mac(bytes(broken)) is None


def test_lan_conf_has_address_user_and_chassis_control():
    conf = render_lan_conf(6230, "admin", "pw", "/usr/bin/python3 -m homecluster_lab.vm.chassis /tmp/x")
    assert "addr 127.0.0.1 6230" in conf
    assert 'user 2 true "admin" "pw" admin' in conf
    assert 'chassis_control "/usr/bin/python3 -m homecluster_lab.vm.chassis /tmp/x"' in conf
    with pytest.raises(ValueError, match="password"):
        render_lan_conf(1, "admin", 'pa"ss', "x")
    with pytest.raises(ValueError, match="20 bytes"):
        render_lan_conf(1, "admin", "p" * 21, "x")


def test_qemu_command_line(tmp_path):
    img = image.ImagePaths(Path("/k"), Path("/i.gz"), Path("/key"), Path("/key.pub"))
    spec = VmSpec(name="w-1", state_dir=tmp_path, image=img, mac="52-54-00-AA-BB-CC", ssh_port=2222, hang=True)
    argv = spec.argv()
    assert argv[:3] == ["qemu-system-x86_64", "-accel", "tcg"]
    assert "-no-reboot" in argv and "-daemonize" in argv
    append = argv[argv.index("-append") + 1]
    assert "homecluster.slot=w-1" in append and "homecluster.hang=1" in append and "console=ttyS0" in append
    nic = argv[argv.index("-nic") + 1]
    assert nic == "user,model=virtio-net-pci,mac=52:54:00:aa:bb:cc,hostfwd=tcp:127.0.0.1:2222-:22"
    assert VmSpec.from_json(spec.to_json()) == spec


def test_names_and_macs_are_validated():
    img = image.ImagePaths(Path("/k"), Path("/i"), Path("/p"), Path("/p.pub"))
    with pytest.raises(ValueError, match="kernel command line"):
        VmSpec(name="a b", state_dir=Path("/tmp/x"), image=img, ssh_port=1)
    with pytest.raises(ValueError, match="not a MAC"):
        normalize_mac("52:54:00:zz:00:00")
    assert mac_for("w1") == mac_for("w1") != mac_for("w2")
    assert normalize_mac(mac_for("w1")) == mac_for("w1")
