"""kube_drain.pod_list_selectors and deletion_pending_for (pure): what a drain lists, and how long a deletion
has been pending."""
from __future__ import annotations

import datetime

from ansible_collections.homecluster.infra.plugins.module_utils.kube_drain import (
    deletion_pending_for, pod_list_selectors,
)


def test_the_node_field_selector_is_always_there_and_the_users_are_anded():
    assert pod_list_selectors("w1") == {"field_selector": "spec.nodeName=w1", "label_selector": None}
    assert pod_list_selectors("w1", ["app=web", "tier!=db"], ["metadata.namespace=default"]) == {
        "field_selector": "spec.nodeName=w1,metadata.namespace=default", "label_selector": "app=web,tier!=db"}


def test_deletion_pending_for_counts_from_the_deletion_timestamp_the_api_wrote():
    stamp = datetime.datetime(2026, 1, 1, 12, 0, 0, tzinfo=datetime.timezone.utc).timestamp()
    assert deletion_pending_for("2026-01-01T12:00:00Z", stamp + 42) == 42
    assert deletion_pending_for("2026-01-01T12:00:00.123456Z", stamp + 1) == 1  # fractions dropped, UTC
    assert deletion_pending_for(None, 0) is None  # not being deleted
    assert deletion_pending_for("yesterday", 0) is None  # unreadable: never "pending long enough"
