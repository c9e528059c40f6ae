"""One evaluation's stored units, read once per content and shared by every verb."""

from __future__ import annotations

from dataclasses import dataclass

from capevolve._store.layout import Layout
from capevolve._store.rollouts.confine import sql_literal
from capevolve._store.rollouts.parts_cache import PartsCache
from capevolve._store.rollouts.query import RolloutStore

CACHED_EVALS = 64
"""Evaluations kept per process (LRU)."""


@dataclass(frozen=True)
class EvalRows:
    """An evaluation's (task_id, trial) units with a stored row, and those with a score."""

    units: frozenset[tuple[str, int]]
    scored: frozenset[tuple[str, int]]

    def done_units(self, valid_only: bool = False) -> set[tuple[str, int]]:
        """(task_id, trial) pairs with a stored row (``valid_only``: a scored row)."""
        return set(self.scored if valid_only else self.units)


_CACHE: PartsCache[EvalRows] = PartsCache(CACHED_EVALS)


def eval_rows(layout: Layout, eval_id: str) -> EvalRows:
    """``eval_id``'s units, cached while its parts are unchanged."""
    def read() -> EvalRows:
        _, rows = RolloutStore(layout).query(
            "SELECT task_id, trial, reward IS NOT NULL FROM rollouts WHERE eval_id = "
            + sql_literal(eval_id), eval_id)
        return EvalRows(frozenset((str(t), int(k)) for t, k, _ in rows),
                        frozenset((str(t), int(k)) for t, k, scored in rows if scored))

    return _CACHE.get(layout, eval_id, lambda: EvalRows(frozenset(), frozenset()), read)
