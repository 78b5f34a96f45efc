"""Webhook deliveries (Standard Webhooks, docs/teams-and-webhooks.md#verifying-a-delivery)."""
from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time
from typing import Any, Dict, Mapping, Optional, Union

from ._errors import EngramError

DEFAULT_TOLERANCE = 300


class WebhookVerificationError(EngramError):
    """The delivery is not genuine: a header is missing, the signature does not match, or it is too old."""


def _header(headers: Mapping[str, Any], name: str) -> Optional[str]:
    value = headers.get(name)
    if value is None:
        value = next((v for k, v in headers.items() if k.lower() == name), None)
    if isinstance(value, (list, tuple)):
        value = value[0] if value else None
    return None if value is None else str(value)


def verify(
    raw_body: Union[str, bytes],
    headers: Mapping[str, Any],
    secret: str,
    *,
    tolerance: float = DEFAULT_TOLERANCE,
    now: Optional[float] = None,
) -> bool:
    """True when a delivery is genuine: `webhook-signature` holds a `v1,<base64 HMAC-SHA256>` of
    `<webhook-id>.<webhook-timestamp>.<raw body>` keyed with the base64 part of `secret` after
    `whsec_` (any of several, space-separated, while a rotated secret is honoured), and
    `webhook-timestamp` is within `tolerance` seconds of now. Pass the body exactly as received."""
    msg_id = _header(headers, "webhook-id")
    timestamp = _header(headers, "webhook-timestamp")
    signatures = _header(headers, "webhook-signature")
    if not msg_id or not timestamp or not signatures or not timestamp.isdigit():
        return False
    current = time.time() if now is None else now
    if not abs(current - int(timestamp)) <= tolerance:
        return False
    try:
        key = base64.b64decode(secret[len("whsec_"):] if secret.startswith("whsec_") else secret, validate=True)
    except (binascii.Error, ValueError):
        return False
    body = raw_body if isinstance(raw_body, bytes) else raw_body.encode("utf-8")
    expected = hmac.new(key, msg_id.encode("utf-8") + b"." + timestamp.encode("ascii") + b"." + body, hashlib.sha256).digest()
    for entry in signatures.split(" "):
        version, _, signature = entry.partition(",")
        if version != "v1" or not signature:
            continue
        try:
            if hmac.compare_digest(base64.b64decode(signature, validate=True), expected):
                return True
        except (binascii.Error, ValueError):
            continue
    return False


def unwrap(
    raw_body: Union[str, bytes],
    headers: Mapping[str, Any],
    secret: str,
    *,
    tolerance: float = DEFAULT_TOLERANCE,
    now: Optional[float] = None,
) -> Dict[str, Any]:
    """The event of a genuine delivery ({id, type, created_at, tenant_id, data}); raises WebhookVerificationError otherwise."""
    if not verify(raw_body, headers, secret, tolerance=tolerance, now=now):
        raise WebhookVerificationError("The webhook signature does not verify (wrong secret, changed body, or too old)", code="WEBHOOK_VERIFICATION_FAILED")
    event = json.loads(raw_body)
    if not isinstance(event, dict):
        raise WebhookVerificationError("The webhook body is not a JSON object", code="WEBHOOK_VERIFICATION_FAILED")
    return event
