"""The names `make images` tags are the ones the operator and the chart ask for (no image built needed)."""
from __future__ import annotations

import re

import yaml

import runc_container as rc
from homecluster.lifecycle.context import DEFAULT_JOB_IMAGE

SCRIPT = (rc.REPO / "scripts" / "build-images.sh").read_text()
REGISTRY = re.search(r"^REGISTRY=(\S+)$", SCRIPT, re.M).group(1)


def test_the_operators_default_runner_image_is_the_one_built_with_its_version():
    """A Job of an install that leaves jobImage empty asks for this image: it must be the built one, the
    operator's own version, never `latest` (which nothing builds)."""
    assert DEFAULT_JOB_IMAGE == f"{REGISTRY}/homecluster-runner:{rc.version()}"


def test_the_charts_controller_image_is_the_one_built():
    chart = yaml.safe_load((rc.REPO / "charts" / "homecluster" / "Chart.yaml").read_text())
    values = yaml.safe_load((rc.REPO / "charts" / "homecluster" / "values.yaml").read_text())
    assert values["image"]["repository"] == f"{REGISTRY}/homecluster-controller"
    assert (values["image"]["tag"] or chart["appVersion"]) == rc.version()
