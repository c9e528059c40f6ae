"""One evaluation's stored rows, read once per content and shared by every verb."""

from __future__ import annotations

from dataclasses import dataclass, field

from capevolve._store.layout import Layout
from capevolve._store.rollouts.confine import sql_literal
from capevolve._store.rollouts.parts_cache import PartsCache
from capevolve._store.rollouts.query import RolloutStore

CACHED_EVALS = 64
"""Evaluations kept per process (LRU)."""


@dataclass
class TaskOutcomes:
    """Per-task trial outcomes of one evaluation."""

    rewards: dict[str, list[float]] = field(default_factory=dict)  # valid rewards by task
    errors: dict[str, int] = field(default_factory=dict)  # errored trials by task
    n_rows: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    cost_unrecorded: int = 0


@dataclass(frozen=True)
class Row:
    """The columns of a row the verbs read."""

    task_id: str
    trial: int
    reward: float | None
    error: str | None
    tokens: int
    cost_usd: float | None
    output_digest: str


@dataclass(frozen=True)
class EvalRows:
    """An evaluation's rows, one per unit, by task then trial."""

    rows: tuple[Row, ...]

    def outcomes(self) -> TaskOutcomes:
        """Valid rewards and error counts per task."""
        out = TaskOutcomes()
        for r in self.rows:
            out.rewards.setdefault(r.task_id, [])
            if r.reward is not None:
                out.rewards[r.task_id].append(float(r.reward))
            else:
                out.errors[r.task_id] = out.errors.get(r.task_id, 0) + 1
            out.n_rows += 1
            out.tokens += r.tokens
            out.cost_usd += r.cost_usd or 0.0
            out.cost_unrecorded += r.cost_usd is None
        return out

    def done_units(self, valid_only: bool = False) -> set[tuple[str, int]]:
        """(task_id, trial) pairs with a stored row (``valid_only``: a scored row)."""
        return {(r.task_id, r.trial) for r in self.rows
                if not valid_only or r.reward is not None}

    def outputs(self) -> dict[str, list[str]]:
        """Task -> sorted distinct digests of its scored outputs."""
        found: dict[str, set[str]] = {}
        for r in self.rows:
            if r.reward is not None:
                found.setdefault(r.task_id, set()).add(r.output_digest)
        return {t: sorted(v) for t, v in found.items()}


_CACHE: PartsCache[EvalRows] = PartsCache(CACHED_EVALS)


def eval_rows(layout: Layout, eval_id: str) -> EvalRows:
    """``eval_id``'s rows, cached while its parts are unchanged."""
    def read() -> EvalRows:
        _, rows = RolloutStore(layout).query(
            "SELECT task_id, trial, reward, error, coalesce(tokens, 0), cost_usd, "
            "sha256(coalesce(output, '')) FROM rollouts WHERE eval_id = " + sql_literal(eval_id)
            + " ORDER BY task_id, trial", eval_id)
        return EvalRows(tuple(Row(str(t), int(k), None if r is None else float(r), e,
                                  int(n), None if c is None else float(c), str(d))
                              for t, k, r, e, n, c, d in rows))

    return _CACHE.get(layout, eval_id, lambda: EvalRows(()), read)

