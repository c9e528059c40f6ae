"""One read of an evaluation's rows for its summary: every row, as columns, in one query.

The summary of an evaluation (task means, error counts, row count, per-trial means, pass
counts, the judge-unreachable units) needs the same rows several times over. This module
reads them once, through the deduplicated ``rollouts`` view of
:class:`~capevolve._store.rollouts.query.RolloutStore` (so the one-row-per-unit rule is
the view's, never re-implemented here), as Arrow columns rather than Python tuples.

Contract of :func:`read_eval_rows`: the rows of ``eval_id`` ordered by (task_id, trial);
``scored`` is False where the stored reward is null (an errored unit; its ``reward`` is
then NaN and means nothing); ``lost`` is True where
a unit has no reward and its error begins with ``lost_prefix`` (a judge that could not be
reached). A failing read is one StoreError line, as for every query.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from capevolve._lazy import lazy_module
from capevolve._store.rollouts.arrow_numpy import valid, values
from capevolve._store.rollouts.confine import read_only_statement
from capevolve._store.rollouts.query import RolloutStore
from capevolve.errors import StoreError

if TYPE_CHECKING:
    import duckdb
    import pyarrow.compute as pc
else:  # imported at first use: an evaluation reaches its first rollout without them
    duckdb = lazy_module("duckdb")
    pc = lazy_module("pyarrow.compute")

_SQL = """
    SELECT task_id, trial, reward,
           reward IS NULL AND coalesce(starts_with(error, $prefix), false) AS lost
    FROM rollouts WHERE eval_id = $eval_id ORDER BY task_id, trial
"""


@dataclass(frozen=True)
class EvalRows:
    """An evaluation's rows as columns, ordered by (task_id, trial).

    ``names`` are the distinct task ids in sorted order (an Arrow string array: no Python
    object per task); ``task`` indexes into it per row.
    """

    names: pa.Array
    task: np.ndarray  # int64, index into ``names``
    trial: np.ndarray  # int64
    reward: np.ndarray  # float64, meaningful only where ``scored``
    scored: np.ndarray  # bool: the row has a reward (not an errored unit)
    lost: np.ndarray  # bool: no reward and the judge was unreachable

    @property
    def tasks(self) -> tuple[str, ...]:
        """``names`` as Python strings (built on each call)."""
        return tuple(self.names.to_pylist())

    @property
    def n_rows(self) -> int:
        """How many units have a stored row."""
        return int(self.trial.size)


def read_eval_rows(store: RolloutStore, eval_id: str, lost_prefix: str) -> EvalRows:
    """Every row of ``eval_id`` in one confined, read-only query (see the module docstring)."""
    try:
        con = store.connect(eval_id)
    except duckdb.Error as exc:
        raise StoreError(f"rollouts unreadable: {_first_line(exc)}") from None
    try:
        read_only_statement(con, _SQL)
        relation = con.sql(_SQL, params={"prefix": lost_prefix, "eval_id": eval_id})
        # DuckDB 2 names it to_arrow_table, 1.x arrow (pyproject: duckdb>=1.1)
        table = (getattr(relation, "to_arrow_table", None) or relation.arrow)()
    except duckdb.Error as exc:
        raise StoreError(f"query failed: {_first_line(exc)}") from None
    finally:
        con.close()
    return _columns(table)


def _columns(table: pa.Table) -> EvalRows:
    encoded = pc.dictionary_encode(table.column("task_id").combine_chunks())
    # rows are sorted by task_id and the dictionary is in order of first appearance, so
    # the dictionary is sorted too and the indices are non-decreasing
    names = encoded.dictionary.cast(pa.string())
    task = values(encoded.indices).astype(np.int64, copy=False)
    trial = values(table.column("trial")).astype(np.int64, copy=False)
    column = table.column("reward").combine_chunks().cast(pa.float64())
    scored = valid(column)
    reward = values(column, fill=float("nan"))
    lost = values(table.column("lost"), fill=False).astype(bool, copy=False)
    return EvalRows(names=names, task=task, trial=trial, reward=reward, scored=scored,
                    lost=lost)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
