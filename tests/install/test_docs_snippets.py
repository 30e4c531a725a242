"""Every ```yaml block in docs/ and every sample is valid: the v1alpha1 docs were largely invalid.

A block that is a Kubernetes object (apiVersion and kind) is validated like a manifest (manifest_check:
our CRDs, or the Kubernetes schemas); a block that is not an object (a container fragment, the autoscaler's
cloud-config) must parse as YAML, and a cloud-config must carry the keys the autoscaler reads. Every
```console line that runs `kubectl patch` on a status subresource is checked for the same.
"""
from __future__ import annotations

import re

import pytest
import yaml

from install_helpers import CONFIG, REPO, render
from manifest_check import check

DOCS = sorted((REPO / "docs").glob("*.md"))
FENCE = re.compile(r"^```yaml\n(.*?)^```", re.S | re.M)
CLOUD_CONFIG_KEYS = {"address", "cert", "key", "cacert", "grpc_timeout"}


def _blocks() -> list[tuple[str, str]]:
    out = []
    for path in DOCS:
        text = path.read_text()
        for match in FENCE.finditer(text):
            line = text[: match.start()].count("\n") + 1
            out.append((f"{path.name}:{line}", match.group(1)))
    return out


BLOCKS = _blocks()


def test_the_docs_have_snippets():
    assert len(BLOCKS) >= 8


class AnsibleLoader(yaml.SafeLoader):
    """SafeLoader that reads Ansible Vault values (`!vault |`) as the strings they are in a document."""


AnsibleLoader.add_constructor("!vault", lambda loader, node: loader.construct_scalar(node))


@pytest.mark.parametrize("where,block", BLOCKS, ids=[w for w, _ in BLOCKS])
def test_yaml_snippet_is_valid(where, block):
    docs = [d for d in yaml.load_all(block, Loader=AnsibleLoader) if d is not None]
    assert docs, f"{where}: empty yaml block"
    for doc in docs:
        if isinstance(doc, dict) and "apiVersion" in doc and "kind" in doc:
            assert check(doc) == [], where
        elif isinstance(doc, dict) and "address" in doc:
            assert set(doc) <= CLOUD_CONFIG_KEYS, f"{where}: unknown cloud-config keys {set(doc) - CLOUD_CONFIG_KEYS}"
            assert doc["address"].rpartition(":")[2].isdigit(), f"{where}: address must include a port"


def test_documented_cloud_config_is_the_shipped_one():
    shipped = next(o for o in render(CONFIG / "autoscaler") if o["kind"] == "ConfigMap")
    shipped = yaml.safe_load(shipped["data"]["cloud-config"])
    documented = [yaml.safe_load(b) for w, b in BLOCKS if w.startswith("autoscaler.md") and "address:" in b]
    assert documented == [shipped]


def test_status_reset_command_targets_a_real_field():
    """The AttemptLimitExceeded reset in common-issues.md patches a field the slot's status has."""
    text = (REPO / "docs" / "common-issues.md").read_text()
    (command,) = re.findall(r"kubectl patch slot \S+ --subresource=status --type=merge -p '([^']+)'", text)
    import json
    patch = json.loads(command)
    from homecluster.api.crd import all_crds
    from homecluster_lab.crdcheck.openapi import crd_schema
    status = crd_schema(all_crds()["Node"])["properties"]["status"]["properties"]
    assert set(patch["status"]) <= set(status), f"{patch} names no field of Node.status ({sorted(status)})"


def test_docs_link_to_files_that_exist():
    for path in DOCS:
        for target in re.findall(r"\]\(([^)#:]+\.md)(?:#[^)]*)?\)", path.read_text()):
            assert (path.parent / target).exists(), f"{path.name} links to missing {target}"


def test_every_printer_column_is_documented():
    from homecluster.api.crd import all_crds
    text = (REPO / "docs" / "pool-at-a-glance.md").read_text()
    for kind, crd in all_crds().items():
        for version in crd["spec"]["versions"]:
            for column in version.get("additionalPrinterColumns", []):
                row = f"| {column['name'].upper()} | `{column['jsonPath'].lstrip('.')}` |"
                assert row in text, f"pool-at-a-glance.md does not explain {kind}'s column {column['name']}"
