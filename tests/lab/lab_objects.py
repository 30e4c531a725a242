"""Objects shared by the lab tests (imported by name: `conftest` is ambiguous across test folders)."""
from __future__ import annotations

from typing import Any

TEST_GROUP = "lab.homecluster.dev"

# A small CRD independent of the project's generated ones: status subresource, defaults, printer columns.
WIDGET_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": f"widgets.{TEST_GROUP}"},
    "spec": {
        "group": TEST_GROUP, "scope": "Cluster",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"],
                  "categories": ["homecluster"]},
        "versions": [{
            "name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
            "additionalPrinterColumns": [
                {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
                {"name": "Ready", "type": "string", "jsonPath": '.status.conditions[?(@.type=="Ready")].status'},
                {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
            ],
            "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {
                    "spec": {"type": "object", "required": ["size"], "properties": {
                        "size": {"type": "integer", "minimum": 0},
                        "color": {"type": "string", "enum": ["red", "blue"], "default": "red"},
                        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    }},
                    "status": {"type": "object", "properties": {
                        "phase": {"type": "string"},
                        "conditions": {"type": "array", "items": {"type": "object",
                                       "x-kubernetes-preserve-unknown-fields": True}},
                    }},
                },
            }},
        }],
    },
}
