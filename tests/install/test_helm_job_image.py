"""The chart's runner image: by the chart's own version by default, pinned by digest on request (issue 23 item 14).

Skipped, saying how to build it, when `make k8s` has not built helm.
"""
from __future__ import annotations

from helm_chart import NO_CERT_MANAGER, helm, parse, template

DIGEST = "sha256:" + "ab" * 32


def _args(*sets: str) -> list[str]:
    rendered = parse(template(*sets, *NO_CERT_MANAGER))
    deployment = next(o for o in rendered if o["kind"] == "Deployment")
    return deployment["spec"]["template"]["spec"]["containers"][0]["args"]


def test_a_digest_pins_the_default_runner_of_the_charts_version():
    from homecluster.version import version

    assert f"--job-image=ghcr.io/homecluster-dev/homecluster-runner:{version()}@{DIGEST}" in _args(
        f"operator.jobImageDigest={DIGEST}")


def test_a_digest_pins_the_runner_named_by_job_image():
    assert f"--job-image=registry.lan/runner:2@{DIGEST}" in _args(
        "operator.jobImage=registry.lan/runner:2", f"operator.jobImageDigest={DIGEST}")


def test_without_a_digest_the_operator_chooses_its_own_versions_runner():
    assert not [a for a in _args() if a.startswith("--job-image")]


def test_a_digest_that_is_not_one_fails_naming_the_value_and_the_form():
    done = helm("template", "homecluster", "charts/homecluster", "--set", "operator.jobImageDigest=latest",
                *[f"--set={s}" for s in NO_CERT_MANAGER])
    assert done.returncode != 0 and "operator.jobImageDigest" in done.stderr and "sha256:" in done.stderr
