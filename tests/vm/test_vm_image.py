"""The VM image builds from Debian packages, and a second build is a cache hit."""
from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from homecluster_lab.vm import guest_init, host_tools, image
from homecluster_lab.vm.image import build_report

pytestmark = pytest.mark.vm
HOMECLUSTER = Path(sys.executable).parent / "homecluster"


def _initramfs_listing(path) -> list[str]:
    data = gzip.decompress(path.read_bytes())
    out = subprocess.run(["cpio", "-it", "--quiet"], input=data, capture_output=True, check=True)
    return out.stdout.decode().split()


def test_image_has_kernel_initramfs_and_key(image_report):
    paths = image_report.paths
    assert paths.kernel.stat().st_size > 5_000_000
    assert paths.kernel.read_bytes()[0x202:0x206] == b"HdrS"  # the x86 boot protocol header of a bzImage
    listing = _initramfs_listing(paths.initramfs)
    for wanted in ("init", "bin/busybox", "bin/sh", "usr/sbin/dropbear", "usr/bin/dropbearkey",
                   "lib64/ld-linux-x86-64.so.2", "lib/x86_64-linux-gnu/libtomcrypt.so.1",
                   "root/.ssh/authorized_keys", guest_init.MODULE_LIST.lstrip("/"),
                   "lib/modules/kernel/drivers/net/virtio_net.ko"):
        assert wanted in listing, f"{wanted} missing from the initramfs"
    assert paths.ssh_private_key.stat().st_mode & 0o077 == 0, "ssh refuses a private key others can read"
    assert paths.ssh_public_key.read_text().startswith("ssh-ed25519 ")
    assert image_report.kernel_release.endswith("-cloud-amd64")
    assert f"linux-image-{image_report.kernel_release}" in image_report.packages


def test_second_build_is_a_cache_hit_that_builds_nothing(image_report, monkeypatch):
    """Proven by what it does, not by its time (a loaded machine took 9.5 s over the stamp's checks and the lock
    another worker held): no build step runs, the image is not rewritten. The time is printed, as a figure."""
    before = image_report.paths.initramfs.stat().st_mtime_ns

    def no_build(*_args, **_kwargs):
        raise AssertionError("a warm build ran a build step")
    monkeypatch.setattr(image, "_build", no_build)
    started = time.monotonic()
    again = build_report(image_report.paths.kernel.parent)
    print(f"warm VM image build: {time.monotonic() - started:.2f}s (a cache hit)")
    assert again.cache_hit
    assert again.cache_key == image_report.cache_key
    assert image_report.paths.initramfs.stat().st_mtime_ns == before, "a cache hit must not rewrite the image"


@pytest.mark.parametrize("absent", ["depmod", "readelf"])
def test_the_builder_names_a_missing_tool_and_its_package_before_building(tmp_path, absent):
    """`homecluster vm-image` on a PATH that has every builder tool but one (a fresh machine had no depmod)."""
    path = tmp_path / "bin"
    path.mkdir()
    for program in host_tools.BUILDER_TOOLS:
        found = shutil.which(program)
        if program != absent and found:
            (path / program).symlink_to(found)
    build = tmp_path / "build"
    proc = subprocess.run([str(HOMECLUSTER), "vm-image", "--build-dir", str(build)], capture_output=True, text=True,
                          timeout=60, env=dict(os.environ, PATH=str(path)))
    assert proc.returncode == 1
    package = host_tools.BUILDER_TOOLS[absent]
    assert f"{absent} (Debian package {package})" in proc.stderr and "scripts/system-deps.sh" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    assert not build.exists(), "nothing is downloaded or built before the check"
