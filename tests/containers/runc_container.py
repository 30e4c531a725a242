"""Run a built image's bundle (scripts/build-images.sh: rootfs/ + config.json from umoci) as a container with
runc, confined as the operator's pods and lifecycle Jobs are: a non-root user, the root filesystem read-only,
every capability dropped, no privilege escalation, writable emptyDirs as tmpfs, the host's network namespace
(a Wake-on-LAN Job's hostNetwork; the loopback peers the tests start are reachable so)."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
IMAGES_DIR = Path(os.environ.get("HOMECLUSTER_IMAGES_DIR", Path.home() / ".cache" / "homecluster" / "images"))
CAPABILITY_SETS = ("bounding", "effective", "inheritable", "permitted", "ambient")


def version() -> str:
    return re.search(r'^version = "(.+)"', (REPO / "pyproject.toml").read_text(), re.M).group(1)


def bundle(name: str) -> Path:
    """The unpacked image homecluster-NAME:VERSION, as `make images` leaves it."""
    return IMAGES_DIR / "bundles" / f"homecluster-{name}-{version()}"


def why_not_runnable(name: str) -> str | None:
    """Why the image cannot be run here (the skip reason), or None."""
    if not (bundle(name) / "config.json").is_file():
        return f"no {bundle(name)}: build the images with `make images` (docs/images.md)"
    if os.geteuid() != 0:
        return "runc runs containers as root here; run the tests as root"
    if not shutil.which("runc"):
        return "no runc: `make images` installs it (Debian's runc)"
    return None


def confined_config(name: str, args: list[str], *, uid: int, gid: int, env: dict[str, str] | None = None,
                    cwd: str = "/", tmpfs: dict[str, str] | None = None,
                    binds: dict[str, Path] | None = None, writable: dict[str, Path] | None = None) -> dict:
    """The image's own runtime config (its env and entrypoint as umoci wrote them), confined as a pod's
    securityContext does: runAsUser/runAsGroup, readOnlyRootFilesystem, capabilities drop ALL,
    allowPrivilegeEscalation false; `tmpfs` {path: owner uid} and `writable` {path: host dir} for emptyDirs
    (a host directory, as the kubelet makes one, when the test reads what was written), `binds` {path: host dir}
    mounted read-only (the Secret, downwardAPI and ConfigMap volumes); no network namespace of its own."""
    config = json.loads((bundle(name) / "config.json").read_text())
    process = config["process"]
    process.update(args=args, cwd=cwd, terminal=False, noNewPrivileges=True,
                   user={"uid": uid, "gid": gid, "additionalGids": [gid]})
    image_env = dict(e.split("=", 1) for e in process.get("env", []))
    image_env.update(env or {})
    process["env"] = [f"{k}={v}" for k, v in image_env.items()]
    process["capabilities"] = {s: [] for s in CAPABILITY_SETS}
    config["root"] = {"path": str(bundle(name) / "rootfs"), "readonly": True}
    for path, owner in (tmpfs or {}).items():
        config["mounts"].append({"destination": path, "type": "tmpfs", "source": "tmpfs",
                                 "options": ["nosuid", "nodev", "mode=0770", f"uid={owner}", f"gid={owner}"]})
    for path, source in (binds or {}).items():
        config["mounts"].append({"destination": path, "type": "bind", "source": str(source),
                                 "options": ["rbind", "ro", "nosuid", "nodev", "noexec"]})
    for path, source in (writable or {}).items():
        config["mounts"].append({"destination": path, "type": "bind", "source": str(source),
                                 "options": ["rbind", "rw", "nosuid", "nodev"]})
    linux = config["linux"]
    linux["namespaces"] = [n for n in linux["namespaces"] if n["type"] not in ("network", "user")]
    return config


def run(config: dict, workdir: Path, timeout: float = 180) -> subprocess.CompletedProcess:
    """`runc run` of the config in a bundle under workdir (its own runc state directory); the container is
    deleted afterwards whatever happened."""
    where = workdir / f"bundle-{uuid.uuid4().hex[:8]}"
    where.mkdir(parents=True)
    (where / "config.json").write_text(json.dumps(config))
    state, cid = workdir / "runc-state", f"hc-test-{uuid.uuid4().hex[:12]}"
    try:
        return subprocess.run(["runc", "--root", str(state), "run", "--bundle", str(where), cid],
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)
    finally:
        subprocess.run(["runc", "--root", str(state), "delete", "--force", cid], capture_output=True)
