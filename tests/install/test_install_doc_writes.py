"""docs/install.md's table of what the operator writes agrees with the operator's RBAC for pools (Groups).

The page once said the operator writes Group counts; it never did, and its ClusterRole cannot. This keeps
the page and config/rbac together: the Group row says nothing is written, and no rule grants a write on
groups or groups/status.
"""
from __future__ import annotations

import yaml

from install_helpers import REPO

READ = {"get", "list", "watch"}


def test_the_group_row_matches_the_operators_rbac():
    text = (REPO / "docs" / "install.md").read_text()
    row = next(line for line in text.splitlines() if line.startswith("| `Group` (pool) |"))
    assert "nothing" in row and "counts" not in row.replace("no counts", ""), row
    for doc in yaml.safe_load_all((REPO / "config" / "rbac" / "role.yaml").read_text()):
        for rule in doc.get("rules") or []:
            if "infra.homecluster.dev" in rule.get("apiGroups", []) and \
                    {"groups", "groups/status", "*"} & set(rule.get("resources", [])):
                assert set(rule["verbs"]) <= READ, f"{doc['metadata']['name']} may write Groups: {rule}"
