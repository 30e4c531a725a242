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
