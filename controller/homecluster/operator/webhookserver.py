"""kopf's webhook server, with the one-live-claim refusal given its structured status.

kopf turns an AdmissionError into a status of {message, code} only. The specification's refusal is a
field.Forbidden on spec.slotRef, which a Go webhook built on controller-runtime sends as
reason Forbidden with details.causes [{field: spec.slotRef, reason: FieldValueForbidden}]. This
server hands kopf a review function that passes each response through
homecluster.webhook.with_field_cause before it is serialised; the message is unchanged.
"""
from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import kopf

from homecluster.webhook import with_field_cause


class WebhookServer(kopf.WebhookServer):
    async def __call__(self, fn: Any) -> AsyncIterator[Any]:
        async def review(request: Any, **kwargs: Any) -> Any:
            return with_field_cause(await fn(request, **kwargs))

        async for client_config in super().__call__(review):
            yield client_config
