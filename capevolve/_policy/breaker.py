"""The circuit breaker of an evaluation's model endpoint (pure: it reads rows it is shown).

Rows arrive in the order they finish. A row that failed with a model failure of a kind
that will not pass by retrying the next rollout (``quota``, ``auth``, ``unreachable``,
``server``) extends the streak of that kind; any other row (a reward, an error of another
kind) ends it. ``failures`` rows in a row of one kind trip the breaker: the evaluation stops
dispatching and is incomplete with :attr:`Breaker.reason`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from capevolve.kinds import ModelFailure

TRIPS = frozenset({ModelFailure.QUOTA, ModelFailure.AUTH, ModelFailure.UNREACHABLE,
                   ModelFailure.SERVER})
"""The model failures a breaker counts."""
REASON_PREFIX = "circuit breaker:"
"""How every breaker reason begins (the CLI exits 1 on it)."""


class Breaker:
    """Counts consecutive same-kind model failures (see the module docstring)."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.kind: str | None = None
        self.streak = 0
        self.reason: str | None = None

    def see(self, errors: Iterable[Any], kinds: Iterable[Any]) -> str | None:
        """Take the error and model_failure columns of finished rows, in order; the
        reason once tripped (then it stays tripped)."""
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
        """:meth:`see` of a batch: a row batch's columns, or a list of row dicts."""
        columns = getattr(rows, "columns", None)
        if isinstance(columns, Mapping):
            errors, kinds = columns.get("error"), columns.get("model_failure")
            n = len(rows)
            return self.see(errors if isinstance(errors, list) else [errors] * n,
                            kinds if isinstance(kinds, list) else [kinds] * n)
        return self.see([r.get("error") for r in rows], [r.get("model_failure") for r in rows])
