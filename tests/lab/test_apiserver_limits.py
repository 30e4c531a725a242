"""The CRDs refuse numbers and durations above their maxima (homecluster.limits), as the API server words it.

The lab API server runs the generated schemas (maximum, maxLength, the CEL duration rule); the values
are the ones that wedged the operator before the maxima existed (issue 15, items 4 and 5).
"""
from __future__ import annotations

import aiohttp
import pytest
from support import objects

from homecluster import GROUP_VERSION

pytestmark = pytest.mark.lab
GROUPS = "/apis/infra.homecluster.dev/v2alpha1/groups"
CLAIMS = "/apis/infra.homecluster.dev/v2alpha1/nodeclaims"


def group(name: str, **spec) -> dict:
    body = {"minSize": 0, "maxSize": 3, "template": {"capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"}}}
    body.update(spec)
    return {"apiVersion": GROUP_VERSION, "kind": "Group", "metadata": {"name": name}, "spec": body}


async def post(lab_api, path: str, body: dict) -> tuple[int, dict]:
    async with aiohttp.ClientSession(lab_api.url) as s:
        async with s.post(path, json=body) as resp:
            return resp.status, await resp.json()


@pytest.mark.parametrize("spec, field, words", [
    ({"maxNodeProvisionTime": "100000000h"}, "spec.maxNodeProvisionTime", "google.protobuf.Duration"),
    ({"maxNodeProvisionTime": "25h"}, "spec.maxNodeProvisionTime", "must be at most 24h"),
    ({"autoscaling": {"scaleDownUnneededTime": "169h"}}, "spec.autoscaling.scaleDownUnneededTime",
     "must be at most 168h"),
    ({"ttlSecondsAfterFinished": 9000000000000}, "spec.ttlSecondsAfterFinished", "less than or equal to 31536000"),
    ({"maxSize": 3000000000}, "spec.maxSize", "less than or equal to 1000"),
    ({"pricing": {"energyPricePerKWh": 1e300}}, "spec.pricing.energyPricePerKWh", "less than or equal to 1000"),
    ({"template": {"capacity": {"cpu": "1e99999", "memory": "16Gi", "pods": "110"}}},
     "spec.template.capacity.cpu", "should match"),
])
async def test_a_group_over_a_maximum_is_refused_naming_the_field(lab_api, spec, field, words):
    code, status = await post(lab_api, GROUPS, group("over", **spec))
    assert code == 422, status
    assert field in status["message"] and words in status["message"], status["message"]


async def test_the_maxima_themselves_are_accepted(lab_api):
    code, status = await post(lab_api, GROUPS, group(
        "edge", maxSize=1000, maxNodeProvisionTime="24h", ttlSecondsAfterFinished=31536000,
        autoscaling={"scaleDownUnneededTime": "168h", "scaleDownUnreadyTime": "167h59m60s"}))
    assert code == 201, status


async def test_a_claim_kept_for_three_hundred_thousand_years_is_refused(lab_api):
    claim = objects.claim("forever", spec={"ttlSecondsAfterFinished": 9000000000000})
    code, status = await post(lab_api, CLAIMS, claim)
    assert code == 422
    assert "spec.ttlSecondsAfterFinished" in status["message"] and "31536000" in status["message"]
