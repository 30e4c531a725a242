"""The envelope every kind shares: apiVersion, kind, metadata, spec, status."""
from __future__ import annotations

from typing import Any

from pydantic import Field

from homecluster import GROUP_VERSION
from homecluster.api.types import ApiModel


class Resource(ApiModel):
    """apiVersion/kind/metadata of a cluster-scoped custom resource; subclasses add spec and status.

    metadata stays a plain dict: the API server owns its schema, and the controller reads only
    name, labels, annotations, finalizers and timestamps from it.
    """

    api_version: str = Field(GROUP_VERSION, alias="apiVersion")
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def name(self) -> str:
        return str(self.metadata.get("name", ""))
