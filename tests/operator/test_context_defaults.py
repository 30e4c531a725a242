"""lifecycle.context.Context's defaults, as `homecluster run` builds it: a UTC clock and the Job options it passes on."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

from homecluster.kube.store import Store
from homecluster.lifecycle.context import Context


def test_the_default_clock_is_aware_utc_now():
    ctx = Context(client=None, store=Store())  # type: ignore[arg-type]  # the clock needs no server
    now = ctx.now()
    assert now.tzinfo is timezone.utc  # compared with the API's RFC 3339 times: never naive
    assert abs(now - datetime.now(timezone.utc)) < timedelta(seconds=5)


def test_job_options_name_the_jobs_namespace_and_the_allowed_images():
    ctx = Context(client=None, store=Store(), namespace="ops", job_image="runner:1",  # type: ignore[arg-type]
                  job_images=("extra:2",), job_service_accounts=("robot",))
    assert ctx.job_options() == {"namespace": "ops", "image": "runner:1", "allowed_images": ("extra:2",),
                                 "allowed_service_accounts": ("robot",)}
    ctx.job_namespace = "jobs"
    assert ctx.job_options()["namespace"] == "jobs"


def test_the_default_runner_image_is_the_operators_own_release_never_a_moving_tag():
    from homecluster.lifecycle import context
    from homecluster.version import version

    # e.g. ...-runner:0.1.0, as the release tags it
    assert context.DEFAULT_JOB_IMAGE == f"ghcr.io/homecluster-dev/homecluster-runner:{version()}"
    runner_image = context.runner_image
    assert runner_image("1.2.3") == "ghcr.io/homecluster-dev/homecluster-runner:1.2.3"
    # not installed as a distribution: a tag that names no image, rather than a moving one
    assert runner_image("unknown (not installed as a distribution)").endswith(":unknown-version")
