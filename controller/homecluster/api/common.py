"""Small objects shared by the kinds: conditions, Secret references, taints, Job defaults."""
from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Optional

from pydantic import Field

from homecluster.api.bounds import TolerationSeconds
from homecluster.api.types import ApiModel, Int, Name, NonNegativeInt, QuantityMap, Timestamp, list_map


class ConditionStatus(StrEnum):
    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"


class Condition(ApiModel):
    """One observation, upserted by type (the list is a map keyed by type)."""

    type: str = Field(min_length=1, max_length=316, description="The kind of condition, e.g. Ready.")
    status: ConditionStatus = Field(description="True, False or Unknown.")
    reason: Optional[str] = Field(None, max_length=1024, description="A CamelCase word for the last transition.")
    message: Optional[str] = Field(None, max_length=32768, description="The last transition, in words.")
    last_transition_time: Optional[Timestamp] = Field(None, description="When status last changed.")
    observed_generation: Optional[NonNegativeInt] = Field(None, description="The generation this was computed from.")


Conditions = Annotated[list[Condition], list_map("type")]


class SecretRef(ApiModel):
    """A Secret holding credentials. Its namespace defaults to the operator's."""

    name: Name = Field(description="The Secret's name.")
    namespace: Optional[Name] = Field(None, description="The Secret's namespace; defaults to the operator's.")


class TaintEffect(StrEnum):
    NO_SCHEDULE = "NoSchedule"
    PREFER_NO_SCHEDULE = "PreferNoSchedule"
    NO_EXECUTE = "NoExecute"


class Taint(ApiModel):
    """A taint a new node of the pool carries."""

    key: Name = Field(description="The taint key.")
    value: Optional[str] = Field(None, max_length=63, description="The taint value.")
    effect: TaintEffect = Field(description="NoSchedule, PreferNoSchedule or NoExecute.")


class ReadinessTaint(ApiModel):
    """A taint a joining node carries until it can take the pool's work (any effect, unless given)."""

    key: Name = Field(description="The taint key, e.g. node.cilium.io/agent-not-ready.")
    effect: Optional[TaintEffect] = Field(None, description="Match only this effect; any effect when absent.")


class TolerationOperator(StrEnum):
    EXISTS = "Exists"
    EQUAL = "Equal"


class Toleration(ApiModel):
    """A toleration for lifecycle Job pods (the corev1 Toleration fields)."""

    key: Optional[str] = Field(None, description="The taint key; empty with operator Exists matches all.")
    operator: Optional[TolerationOperator] = Field(None, description="Exists or Equal (the default).")
    value: Optional[str] = Field(None, description="The taint value to match with operator Equal.")
    effect: Optional[TaintEffect] = Field(None, description="The effect to match; all effects when absent.")
    toleration_seconds: Optional[TolerationSeconds] = Field(None, description="How long a NoExecute taint is tolerated.")


class ResourceRequirements(ApiModel):
    """CPU and memory for lifecycle Job pods."""

    limits: Optional[QuantityMap] = Field(None, description="Maximum resources.")
    requests: Optional[QuantityMap] = Field(None, description="Requested resources.")


class PullPolicy(StrEnum):
    ALWAYS = "Always"
    IF_NOT_PRESENT = "IfNotPresent"
    NEVER = "Never"


# A container image reference, the grammar of github.com/distribution/reference: [host[:port]/]path[:tag][@digest],
# path components lowercase. No white space or control character fits, so a Group cannot carry a forged log
# line in it (issue 23 item 10). RE2 and Python agree on it.
_HOST = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:[.](?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*"
_PATH = r"[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*"
IMAGE_PATTERN = (rf"^(?:{_HOST}(?::[0-9]+)?/)?{_PATH}(?:/{_PATH})*(?::[A-Za-z0-9_][A-Za-z0-9_.-]{{0,127}})?"
                 r"(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?$")
ImageReference = Annotated[str, Field(min_length=1, max_length=512, pattern=IMAGE_PATTERN)]
# A ServiceAccount's name: a DNS-1123 subdomain, as the API server requires of it.
DNS_SUBDOMAIN_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
ServiceAccountName = Annotated[str, Field(min_length=1, max_length=253, pattern=DNS_SUBDOMAIN_PATTERN)]


class JobDefaults(ApiModel):
    """Defaults for the pool's lifecycle Jobs (startup, shutdown); the operator's settings apply otherwise."""

    image: Optional[ImageReference] = Field(None, description="The image that runs the playbooks (a reference: "
                                                               "[host[:port]/]path[:tag][@digest]).")
    image_pull_policy: Optional[PullPolicy] = Field(None, description="Always, IfNotPresent or Never.")
    service_account_name: Optional[ServiceAccountName] = Field(None, description="The ServiceAccount of Job pods.")
    node_selector: Optional[dict[str, str]] = Field(None, description="Where Job pods may run.")
    tolerations: Optional[list[Toleration]] = Field(None, description="Tolerations of Job pods.")
    priority_class_name: Optional[Name] = Field(None, description="The PriorityClass of Job pods.")
    resources: Optional[ResourceRequirements] = Field(None, description="Resources of Job pods.")
