"""An evaluation's circuit breaker.

``failures`` finished rows in a row failing with one :data:`TRIPS` kind stop dispatching; any other
row resets the streak.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from capevolve.kinds import ModelFailure

TRIPS = frozenset({ModelFailure.QUOTA, ModelFailure.AUTH, ModelFailure.UNREACHABLE,
                   ModelFailure.SERVER})
"""Model failures a retry will not cure."""
REASON_PREFIX = "circuit breaker:"
"""Every breaker reason's start (the CLI exits 1 on it)."""


class Breaker:
    """Counts consecutive same-kind model failures."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.kind: str | None = None
        self.streak = 0
        self.reason: str | None = None

    def see(self, errors: Iterable[Any], kinds: Iterable[Any]) -> str | None:
        """Feed finished rows' errors and failure kinds; the reason once tripped."""
        for error, kind in zip(errors, kinds, strict=True):
            if self.reason:
                break
            if not error or kind not in TRIPS:
                self.kind, self.streak = None, 0
                continue
            self.streak = self.streak + 1 if kind == self.kind else 1
            self.kind = kind
            if self.streak >= self.failures:
                self.reason = (f"{REASON_PREFIX} {self.streak} rollouts in a row failed with "
                               f"model failure {kind}: {str(error)[:200]}")
        return self.reason

    def see_rows(self, rows: Any) -> str | None:
        """:meth:`see` of a batch (columns or row dicts)."""
        columns = getattr(rows, "columns", None)
        if isinstance(columns, Mapping):
            errors, kinds = columns.get("error"), columns.get("model_failure")
            n = len(rows)
            return self.see(errors if isinstance(errors, list) else [errors] * n,
                            kinds if isinstance(kinds, list) else [kinds] * n)
        return self.see([r.get("error") for r in rows], [r.get("model_failure") for r in rows])
