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


def test_deletion_pending_for_counts_from_the_deletion_timestamp():
    stamp = datetime.datetime(2026, 1, 1, 12, 0, 0, tzinfo=datetime.timezone.utc)
    assert deletion_pending_for(stamp, stamp.timestamp() + 42) == 42
    assert deletion_pending_for(stamp.replace(tzinfo=None), stamp.timestamp() + 1) == 1  # naive means UTC
    assert deletion_pending_for(None, 0) is None
