"""Reading a customer request: what they want, which order, items, reason, address, variant.

The policy agent plans from the request text alone (it never sees the task's gold data).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_ORDER = re.compile(r"#?\b(W\d{7})\b")
_ADDRESS = re.compile(r" to ([^,]+), ([^,]+), ([^,]+), ([A-Z]{2}) (\d{5})\.")
_VARIANT = re.compile(r"for the (\w+) one in size (\S+?)\.")
_INTENTS = (("escalate", r"\b(?:human|transfer me|real person)\b"),
            ("cancel", r"\bcancel\b"), ("return", r"\breturn\b"),
            ("exchange", r"\bexchange\b"), ("modify_address", r"\baddress\b"),
            ("modify_payment", r"\b(?:pay for|payment)\b"),
            ("info", r"\b(?:status|total)\b"))


@dataclass(frozen=True)
class Request:
    """What the agent understood from the customer's message."""

    intent: str
    order_id: str | None
    text: str
    reason: str | None = None
    address: dict | None = None
    variant: dict | None = None
    extra: dict = field(default_factory=dict)

    def mentions(self, name: str) -> bool:
        """Whether the request names an item (product name, case-insensitive)."""
        return name.lower() in self.text.lower()


def parse(text: str) -> Request:
    """Intent by keyword (first match wins), order id, and the intent's details."""
    intent = next((name for name, pattern in _INTENTS if re.search(pattern, text, re.IGNORECASE)),
                  "unknown")
    match = _ORDER.search(text)
    order_id = match.group(1) if match else None
    reason = address = variant = None
    if intent == "cancel":
        reason = "ordered by mistake" if "mistake" in text else "no longer needed"
    if intent == "modify_address" and (m := _ADDRESS.search(text)):
        keys = ("address1", "address2", "city", "state", "zip")
        address = dict(zip(keys, (g.strip() for g in m.groups()), strict=True))
    if intent == "exchange" and (m := _VARIANT.search(text)):
        variant = {"color": m.group(1), "size": m.group(2)}
    return Request(intent, order_id, text, reason, address, variant)
