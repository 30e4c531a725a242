"""`homecluster vm-image`: build the lab VM's kernel + initramfs from Debian packages.

Everything comes from Debian: the cloud kernel the `linux-image-cloud-amd64` meta-package
points at, busybox-static, dropbear-bin and the library packages it needs. Packages are fetched
with `apt-get download` into <build>/debs, unpacked with `dpkg-deb -x` (nothing is installed),
modules indexed with `depmod -b`. The result lives in <build> (build/vm/ by default, git-ignored):

  vmlinuz  initramfs.gz  id_ed25519  id_ed25519.pub  stamp.json

The build is skipped when stamp.json records the same cache key: a hash of the package versions
apt offers, the guest's init script and files, root's public key and BUILDER_VERSION.
"""
from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from . import apt, assemble, debian, guest_init, host_tools, kmod

# Bump when the builder's output changes for the same inputs.
BUILDER_VERSION = "1"
BASE_PACKAGES = ("busybox-static", "dropbear-bin")
BUILD_DIR_ENV = "HOMECLUSTER_VM_BUILD_DIR"
# Where downloaded .debs are kept (default <build>/debs). The Makefile points it outside the
# checkout, so a fresh clone on the same machine does not download the 27 MB kernel again.
DEB_CACHE_ENV = "HOMECLUSTER_VM_DEB_CACHE"


@dataclass(frozen=True)
class ImagePaths:
    """What a VM boots with, and the key that opens its root account over SSH."""

    kernel: Path
    initramfs: Path
    ssh_private_key: Path
    ssh_public_key: Path


@dataclass(frozen=True)
class BuildReport:
    """One build_image call: where the image is, whether the cache answered, how long it took."""

    paths: ImagePaths
    cache_hit: bool
    seconds: float
    cache_key: str
    packages: dict[str, str]
    kernel_release: str


def _deb_cache(build_dir: Path) -> Path:
    """$HOMECLUSTER_VM_DEB_CACHE, else <build_dir>/debs (files are named by package and version)."""
    override = os.environ.get(DEB_CACHE_ENV)
    return Path(override) if override else build_dir / "debs"


def default_build_dir() -> Path:
    """$HOMECLUSTER_VM_BUILD_DIR, else build/vm under the current directory."""
    return Path(os.environ.get(BUILD_DIR_ENV) or Path.cwd() / "build" / "vm")


def cache_key(packages: dict[str, str], public_key: str) -> str:
    """The hash that decides whether an existing image is still the one these inputs would build."""
    material = json.dumps(
        {
            "builder": BUILDER_VERSION,
            "packages": dict(sorted(packages.items())),
            "init": guest_init.INIT_SCRIPT,
            "files": guest_init.GUEST_FILES,
            "modules": list(kmod.NETWORK_MODULES),
            "public_key": public_key.strip(),
        },
        sort_keys=True,
    )
    return hashlib.sha256(material.encode()).hexdigest()


def ensure_ssh_key(build_dir: Path) -> tuple[Path, Path]:
    """root's key pair for the guest, made once with ssh-keygen and kept across rebuilds."""
    private = build_dir / "id_ed25519"
    public = build_dir / "id_ed25519.pub"
    if not private.exists():
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "homecluster-lab-vm", "-f", str(private)],
                       check=True, capture_output=True)
    if not public.exists():
        out = subprocess.run(["ssh-keygen", "-y", "-f", str(private)], check=True, capture_output=True, text=True)
        public.write_text(out.stdout)
    private.chmod(0o600)
    return private, public


def resolve_packages(hint: tuple[str, ...] = ()) -> tuple[dict[str, debian.PackageInfo], str]:
    """Every package the image needs at the version apt offers now, and the kernel package's name.

    `hint` (the names the last build used) lets a warm build answer with one apt-cache call;
    names apt no longer knows are simply looked up again the slow way.
    """
    found: dict[str, debian.PackageInfo] = {}
    try:
        found = apt.show([debian.KERNEL_META_PACKAGE, *BASE_PACKAGES, *hint])
    except apt.AptError:
        found = apt.show([debian.KERNEL_META_PACKAGE, *BASE_PACKAGES])
    while True:
        kernel = debian.kernel_package(found[debian.KERNEL_META_PACKAGE])
        libraries = debian.library_closure("dropbear-bin", found)
        missing = [n for n in (kernel, *libraries) if n not in found]
        if not missing:
            break
        found.update(apt.show(missing))
    wanted = [kernel, *BASE_PACKAGES, *libraries]
    return {name: found[name] for name in wanted}, kernel


def _read_stamp(build_dir: Path) -> dict:
    try:
        return json.loads((build_dir / "stamp.json").read_text())
    except (OSError, ValueError):
        return {}


def build_report(build_dir: Path | None = None, force: bool = False) -> BuildReport:
    """Build (or find in the cache) the image under build_dir; see the module docstring.

    Raises host_tools.MissingTools, naming each missing program and its Debian package, before
    anything is downloaded or built.
    """
    host_tools.require(host_tools.BUILDER_TOOLS, "the VM image builder")
    started = time.monotonic()
    build_dir = Path(build_dir or default_build_dir()).resolve()
    build_dir.mkdir(parents=True, exist_ok=True)
    with open(build_dir / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # parallel test workers share one build
        private, public = ensure_ssh_key(build_dir)
        stamp = _read_stamp(build_dir)
        packages, kernel_pkg = resolve_packages(tuple(stamp.get("packages", {})))
        versions = {name: info.version for name, info in packages.items()}
        key = cache_key(versions, public.read_text())
        paths = ImagePaths(build_dir / "vmlinuz", build_dir / "initramfs.gz", private, public)
        release = debian.kernel_release(kernel_pkg)
        hit = (not force and stamp.get("cache_key") == key
               and paths.kernel.exists() and paths.initramfs.exists())
        if not hit:
            _build(build_dir, packages, kernel_pkg, release, public.read_text(), paths)
            seconds = time.monotonic() - started
            stamp = {"cache_key": key, "packages": versions, "kernel_release": release,
                     "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                     "build_seconds": round(seconds, 2)}
            tmp = build_dir / "stamp.json.tmp"
            tmp.write_text(json.dumps(stamp, indent=2) + "\n")
            tmp.replace(build_dir / "stamp.json")
    return BuildReport(paths, hit, time.monotonic() - started, key, versions, release)


def build_image(build_dir: Path | None = None) -> ImagePaths:
    """The image's paths, built first if the cache is stale (see build_report)."""
    return build_report(build_dir).paths


def _build(build_dir: Path, packages: dict[str, debian.PackageInfo], kernel_pkg: str, release: str,
           public_key: str, paths: ImagePaths) -> None:
    work = build_dir / "work"
    shutil.rmtree(work, ignore_errors=True)
    trees = {name: apt.extract(apt.download(info, _deb_cache(build_dir)), work / "pkgs" / name)
             for name, info in packages.items()}
    kernel_tree = trees[kernel_pkg]
    subprocess.run(["depmod", "-b", str(kernel_tree), release], check=True, capture_output=True)
    modules_dep = (kernel_tree / "lib/modules" / release / "modules.dep").read_text()
    order = kmod.load_order(modules_dep)

    root = work / "root"
    root.mkdir(parents=True)
    assemble.install_busybox(root, trees["busybox-static"])
    libs = [tree for name, tree in trees.items() if debian.is_library_package(name)]
    assemble.install_dropbear(root, trees["dropbear-bin"], libs)
    installed = assemble.install_modules(root, kernel_tree, release, order)
    assemble.install_base(root, public_key, installed)
    assemble.pack(root, paths.initramfs)

    vmlinuz = kernel_tree / "boot" / f"vmlinuz-{release}"
    if not vmlinuz.exists():
        raise FileNotFoundError(f"{kernel_pkg}: no boot/vmlinuz-{release} in the package")
    shutil.copyfile(vmlinuz, paths.kernel.with_name(paths.kernel.name + ".tmp"))
    paths.kernel.with_name(paths.kernel.name + ".tmp").replace(paths.kernel)
    shutil.rmtree(work, ignore_errors=True)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--build-dir", type=Path, default=None,
                        help=f"where the image goes (default: ${BUILD_DIR_ENV} or ./build/vm)")
    parser.add_argument("--force", action="store_true", help="rebuild even if the cache key matches")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


def run(args: argparse.Namespace) -> int:
    try:
        report = build_report(args.build_dir, force=args.force)
    except (apt.AptError, FileNotFoundError, ValueError, RuntimeError, subprocess.CalledProcessError) as exc:
        print(f"vm-image: {exc}", file=sys.stderr)
        return 1
    if args.json:
        out = asdict(report)
        out["paths"] = {k: str(v) for k, v in asdict(report.paths).items()}
        print(json.dumps(out, indent=2))
    else:
        state = "cache hit" if report.cache_hit else "built"
        print(f"{state} in {report.seconds:.1f}s: kernel {report.kernel_release}")
        for name, value in asdict(report.paths).items():
            print(f"  {name}: {value}")
    return 0
