"""Gold-leakage guard: find (and optionally redact) a task's target values in feedback.

Leaf strings and numbers match verbatim, ignoring case, never inside a longer word or number.
"""

from __future__ import annotations

import math
import re
from typing import Any

REDACTED = "[REDACTED]"
MIN_CHARS = 2


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if isinstance(value, (list, tuple, set)):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


def gold_values(target: Any) -> list[str]:
    """The searchable texts of a target, longest first (then alphabetical)."""
    texts = set()
    for leaf in _leaves(target):
        if type(leaf) is str:  # the usual leaf, first
            texts.add(leaf.strip())
        elif isinstance(leaf, bool) or leaf is None:
            continue
        elif isinstance(leaf, float) and math.isfinite(leaf) and leaf.is_integer():
            texts.update({str(int(leaf)), str(leaf)})
        elif isinstance(leaf, (int, float, str)):
            texts.add(str(leaf).strip())
    kept = [t for t in texts if len(t) >= MIN_CHARS]
    return sorted(kept, key=_longest_first)


def _longest_first(text: str) -> tuple[int, str]:
    return -len(text), text


def gold_pattern(target: Any) -> re.Pattern | None:
    """One regex for all the target's values; None when there are none."""
    parts = []
    for text in gold_values(target):
        head = r"(?<![\w.])" if text[0].isalnum() or text[0] == "_" else ""
        tail = r"(?![\w])(?!\.\d)" if text[-1].isalnum() or text[-1] == "_" else ""
        parts.append(head + re.escape(text) + tail)
    return re.compile("|".join(parts), re.IGNORECASE) if parts else None


class GoldGuard:
    """Per-task target values from ``{task_id: target}``; a regex is compiled only after a
    substring hit."""

    def __init__(self, targets: dict[str, Any]) -> None:
        self._targets = targets
        self._values: dict[str, list[str]] = {}
        self._patterns: dict[str, re.Pattern | None] = {}

    def _pattern(self, task_id: str, feedback: str | None) -> re.Pattern | None:
        if not feedback:
            return None
        values = self._values.get(task_id)
        if values is None:
            if task_id not in self._targets:
                return None
            values = self._values[task_id] = [v.lower() for v in
                                               gold_values(self._targets[task_id])]
        if not values:
            return None
        text = feedback.lower()
        for value in values:
            if value in text:
                break
        else:
            return None
        if task_id not in self._patterns:
            self._patterns[task_id] = gold_pattern(self._targets[task_id])
        return self._patterns[task_id]

    def leaks(self, task_id: str, feedback: str | None) -> bool:
        """True when the task's target appears verbatim in the feedback."""
        pattern = self._pattern(task_id, feedback)
        return bool(pattern and pattern.search(feedback))

    def redact(self, task_id: str, feedback: str | None) -> str | None:
        """The feedback with every target value replaced by ``[REDACTED]``."""
        pattern = self._pattern(task_id, feedback)
        return pattern.sub(REDACTED, feedback) if pattern else feedback
