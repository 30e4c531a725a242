"""The images `make images` built (scripts/build-images.sh, docs/images.md), as the real node imports them."""
from __future__ import annotations

import os
import re
from pathlib import Path

from . import binaries

IMAGES_DIR = Path(os.environ.get("HOMECLUSTER_IMAGES_DIR") or Path.home() / ".cache" / "homecluster" / "images")
REGISTRY = "ghcr.io/homecluster-dev"


def version() -> str:
    """The project's version (pyproject.toml): the images' tag."""
    return re.search(r'^version = "(.+)"', (binaries.REPO / "pyproject.toml").read_text(), re.M).group(1)


def reference(name: str) -> str:
    """The image's full name as the chart and dist/ use it: ghcr.io/homecluster-dev/homecluster-NAME:VERSION."""
    return f"{REGISTRY}/homecluster-{name}:{version()}"


def archive(name: str) -> Path:
    """The OCI archive of homecluster-NAME (controller, runner) `make images` exported."""
    return IMAGES_DIR / "oci" / f"homecluster-{name}-{version()}.tar"


def missing_reason(*names: str) -> str | None:
    absent = [str(archive(n)) for n in names if not archive(n).is_file()]
    if absent:
        return f"the images are not built ({', '.join(absent)} missing); run `make images` (docs/images.md)"
    return None


def stale_controller_files() -> list[str]:
    """The operator's modules whose text in the built controller image differs from the checkout's (an image built
    before a change runs the old operator); [] when the image carries this checkout's code."""
    built = (IMAGES_DIR / "bundles" / f"homecluster-controller-{version()}" / "rootfs" / "opt" / "homecluster" / "lib")
    packages = sorted(built.glob("python3*/site-packages/homecluster"))
    source = binaries.REPO / "controller" / "homecluster"
    if not packages:
        return [f"{built} (no unpacked image: run `make images`)"]
    return [str(path.relative_to(source)) for path in sorted(source.rglob("*.py"))
            if not (packages[0] / path.relative_to(source)).is_file()
            or (packages[0] / path.relative_to(source)).read_bytes() != path.read_bytes()]
