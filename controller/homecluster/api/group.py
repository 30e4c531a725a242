"""Group: a pool of slots, with what a new node of the pool promises the autoscaler."""
from __future__ import annotations

from typing import Literal, Optional

from pydantic import ConfigDict, Field, model_validator

from homecluster.api.bounds import EnergyPrice, PoolSize, ProvisionTime, ScaleDownTime, TtlSeconds, duration_limit
from homecluster.api.common import Conditions, JobDefaults, ReadinessTaint, Taint
from homecluster.api.resource import Resource
from homecluster.limits import MAX_PROVISION_TIME, MAX_SCALE_DOWN_TIME
from homecluster.api.types import (
    ApiModel, Bool, Capacity, Duration, Fraction, NonNegativeInt, NonNegativeNumber, QuantityMap, cel,
)

MIN_LE_MAX = "spec.minSize must be less than or equal to spec.maxSize"


class GroupTemplate(ApiModel):
    """What a new node of the pool looks like: what cluster-autoscaler simulates before a scale-up."""

    labels: Optional[dict[str, str]] = Field(None, description="Labels a new node of the pool carries.")
    taints: Optional[list[Taint]] = Field(None, description="Taints a new node of the pool carries.")
    capacity: Capacity = Field(description="What a new node offers; cpu, memory and pods are required.")
    allocatable: Optional[QuantityMap] = Field(None, description="What a new node can schedule; defaults to capacity.")


class Autoscaling(ApiModel):
    """Per-pool cluster-autoscaler options; the autoscaler's own flags apply to any left out."""

    scale_down_utilization_threshold: Optional[Fraction] = Field(
        None, description="Utilization (0..1) below which a node may be removed, e.g. 0.5.")
    scale_down_gpu_utilization_threshold: Optional[Fraction] = Field(
        None, description="GPU utilization (0..1) below which a GPU node may be removed.")
    scale_down_unneeded_time: Optional[ScaleDownTime] = Field(
        None, description="How long a node must be unneeded before it is removed.",
        json_schema_extra=duration_limit(MAX_SCALE_DOWN_TIME))
    scale_down_unready_time: Optional[ScaleDownTime] = Field(
        None, description="How long an unready node must be unneeded before it is removed.",
        json_schema_extra=duration_limit(MAX_SCALE_DOWN_TIME))
    zero_or_max_node_scaling: Optional[Bool] = Field(None, description="Scale the pool to zero or to its maximum only.")
    ignore_daemon_sets_utilization: Optional[Bool] = Field(
        None, description="Leave DaemonSet pods out of the utilization computed for scale-down.")


class Pricing(ApiModel):
    """Inputs of the autoscaler's price expander."""

    energy_price_per_kwh: Optional[EnergyPrice] = Field(
        None, alias="energyPricePerKWh", description="The price of one kWh of energy.")


class Gpu(ApiModel):
    """The GPUs a pool's nodes offer."""

    label: Optional[str] = Field(None, min_length=1, description="The node label that carries the GPU type.")
    types: Optional[list[str]] = Field(None, description="The GPU types the pool offers.")


class GroupSpec(ApiModel):
    """A pool: its size bounds, its boot budget, and the template of a new node."""

    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": [
        cel("!has(self.maxSize) || (has(self.minSize) ? self.minSize : 0) <= self.maxSize", MIN_LE_MAX),
    ]})

    min_size: PoolSize = Field(0, description="The autoscaler never goes below this many live claims.")
    max_size: PoolSize = Field(description="At most this many live claims; minSize <= maxSize.")
    max_node_provision_time: Optional[ProvisionTime] = Field(
        None, description="The autoscaler's scale-up budget for this pool. A claim's deadline is "
        "requestedAt + max(boot floor, maxNodeProvisionTime).", json_schema_extra=duration_limit(MAX_PROVISION_TIME))
    node_readiness_taints: Optional[list[ReadinessTaint]] = Field(
        None, description="Taints a joining node carries until it can take the pool's work; a node with any "
        "of them is not usable.")
    ttl_seconds_after_finished: TtlSeconds = Field(
        600, description="Default lifetime, in seconds, of this pool's terminal claims.")
    template: GroupTemplate = Field(description="What a new node of the pool carries and offers.")
    autoscaling: Optional[Autoscaling] = Field(None, description="Per-pool cluster-autoscaler options.")
    pricing: Optional[Pricing] = Field(None, description="Inputs of the autoscaler's price expander.")
    gpu: Optional[Gpu] = Field(None, description="The GPUs the pool's nodes offer.")
    jobs: Optional[JobDefaults] = Field(None, description="Defaults for the pool's lifecycle Jobs.")

    @model_validator(mode="after")
    def _min_le_max(self) -> "GroupSpec":
        if self.min_size > self.max_size:
            raise ValueError(f"{MIN_LE_MAX} (minSize {self.min_size}, maxSize {self.max_size})")
        return self


class GroupStatus(ApiModel):
    """Reserved: the operator writes nothing here in this release.

    Pool counts are not kept on the Group: every count change would be one more write per boot, and
    `kubectl get homecluster` (slots and claims) already shows the pool at a glance.
    """

    conditions: Optional[Conditions] = Field(None, description="Reserved for observations of the pool; "
                                                               "not written in this release.")


class Group(Resource):
    """A pool of slots (``kubectl get pools``)."""

    kind: Literal["Group"] = "Group"
    spec: GroupSpec
    status: GroupStatus = Field(default_factory=GroupStatus)


__all__ = ["Group", "GroupSpec", "GroupStatus", "GroupTemplate", "Autoscaling", "Pricing", "Gpu", "MIN_LE_MAX"]
