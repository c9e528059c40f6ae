"""The usage meter: every model call attempt of one scope, as reported.

An attempt without usage has unknown tokens, never zero.
"""

from __future__ import annotations

import threading
from typing import Any

from capevolve.models.prices import Price

_COUNTS = ("attempts", "prompt_tokens", "completion_tokens", "unknown_attempts",
           "rejected_attempts", "unpriced_calls", "truncated", "tool_offers", "tool_answers",
           "call_text")
"""Counted per attempt."""


class Meter:
    """Counts the attempts of one scope."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.counts = dict.fromkeys(_COUNTS, 0)
        self.cost = 0.0
        self.answered_s = 0.0  # wall seconds of the answered attempts
        self.models: set[str] = set()
        self.failure: str | None = None

    def answered(self, usage: Any, model: Any, price: Price | None,
                 truncated: bool = False, seconds: float = 0.0,
                 tools: str | None = None) -> None:
        """An answered attempt; ``tools``: call, text or none when offered."""
        prompt, completion = _tokens(usage, "prompt_tokens"), _tokens(usage, "completion_tokens")
        with self._lock:
            self.counts["attempts"] += 1
            self.counts["truncated"] += truncated
            self.answered_s += max(0.0, seconds)
            if tools is not None:
                self.counts["tool_offers"] += 1
                self.counts["tool_answers"] += tools == "call"
                self.counts["call_text"] += tools == "text"
            if isinstance(model, str) and model:
                self.models.add(model)
            if prompt is None:
                self.counts["unknown_attempts"] += 1
                return
            self.counts["prompt_tokens"] += prompt
            self.counts["completion_tokens"] += completion or 0
            if price is None:
                self.counts["unpriced_calls"] += 1
            else:
                self.cost += price.cost(prompt, completion or 0)

    def failed(self, unknown: bool, failure: str | None = None) -> None:
        """An unanswered attempt (``unknown``: tokens may have been spent)."""
        with self._lock:
            self.counts["attempts"] += 1
            self.counts["unknown_attempts" if unknown else "rejected_attempts"] += 1
            if failure is not None:
                self.failure = failure

    @property
    def tokens(self) -> int:
        """Prompt + completion tokens reported."""
        return self.counts["prompt_tokens"] + self.counts["completion_tokens"]

    @property
    def cost_usd(self) -> float | None:
        """Dollars of the priced calls (None: none priced)."""
        priced = self.counts["attempts"] - self.counts["unknown_attempts"] \
            - self.counts["rejected_attempts"] - self.counts["unpriced_calls"]
        return self.cost if priced > 0 else None

    @property
    def partial(self) -> bool:
        """Some attempt had unknown tokens or no price."""
        return bool(self.counts["unknown_attempts"] or self.counts["unpriced_calls"])

    def snapshot(self) -> dict[str, Any]:
        """Plain JSON of the meter."""
        with self._lock:
            return {**self.counts, "cost_usd": self.cost, "answered_s": self.answered_s,
                    "models": sorted(self.models), "failure": self.failure}

    def merge(self, data: Any) -> None:
        """Add a :meth:`snapshot`, ignoring malformed parts."""
        if not isinstance(data, dict):
            return
        with self._lock:
            for key in _COUNTS:
                value = data.get(key)
                if type(value) is int and value >= 0:
                    self.counts[key] += value
            for key, attr in (("cost_usd", "cost"), ("answered_s", "answered_s")):
                value = data.get(key)
                if isinstance(value, (int, float)) and not isinstance(value, bool) \
                        and 0 <= value < float("inf"):
                    setattr(self, attr, getattr(self, attr) + float(value))
            self.models.update(m for m in data.get("models") or () if isinstance(m, str))
            if isinstance(data.get("failure"), str):
                self.failure = data["failure"]


def _tokens(usage: Any, key: str) -> int | None:
    value = usage.get(key) if isinstance(usage, dict) else getattr(usage, key, None)
    return value if type(value) is int and value >= 0 else None
