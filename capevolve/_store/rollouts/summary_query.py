"""One read of an evaluation's rows for its summary, as columns."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from capevolve._store.lazy import pc
from capevolve._store.rollouts import arrowpool
from capevolve._store.rollouts.arrow_numpy import int64_array, valid, values
from capevolve._store.rollouts.query import RolloutStore

_SQL = """
    SELECT task_id, trial, reward,
           reward IS NULL AND coalesce(starts_with(error, $prefix), false) AS lost
    FROM rollouts WHERE eval_id = $eval_id
"""


@dataclass(frozen=True)
class EvalRows:
    """An evaluation's rows as columns, ordered by (task_id, trial)."""

    names: pa.Array
    task: np.ndarray  # int64, index into ``names``
    trial: np.ndarray  # int64
    reward: np.ndarray  # float64, meaningful only where ``scored``
    scored: np.ndarray  # bool: the row has a reward (not an errored unit)
    lost: np.ndarray  # bool: no reward and the judge was unreachable

    @property
    def n_rows(self) -> int:
        """Rows held."""
        return int(self.trial.size)

    def has_duplicate_units(self) -> bool:
        """Whether some (task, trial) has more than one row."""
        same_task = self.task[1:] == self.task[:-1]
        return bool(np.any(same_task & (self.trial[1:] == self.trial[:-1])))


def read_eval_rows(store: RolloutStore, eval_id: str, lost_prefix: str) -> EvalRows:
    """One row per unit of ``eval_id``; ``lost``: unscored, its error starting ``lost_prefix``.

    A failing read is a one-line StoreError.
    """
    rows = _columns(_read(store, eval_id, lost_prefix, every_row=True))
    if rows.has_duplicate_units():
        rows = _columns(_read(store, eval_id, lost_prefix, every_row=False))
    arrowpool.release_unused()  # the sort's memory, before the caller's work on the rows
    return rows


def _read(store: RolloutStore, eval_id: str, lost_prefix: str, every_row: bool) -> pa.Table:
    """The query's answer as an Arrow table; DuckDB's memory is released on close."""
    try:
        return store.table(_SQL, eval_id, every_row=every_row,
                           params={"prefix": lost_prefix, "eval_id": eval_id})
    finally:
        arrowpool.release_unused()


def _columns(table: pa.Table) -> EvalRows:
    """``table``'s rows as :class:`EvalRows`, by task id in byte order, then trial."""
    pool = arrowpool.POOL
    ids = table.column("task_id").combine_chunks(memory_pool=pool)
    order = pc.sort_indices(ids, memory_pool=pool)
    ranked = pc.take(ids, order, memory_pool=pool)
    del ids
    n = len(ranked)
    start = np.ones(n, dtype=bool)  # the first row of each task
    if n > 1:
        start[1:] = values(pc.not_equal(ranked.slice(1), ranked.slice(0, n - 1),
                                        memory_pool=pool))
    names = pc.cast(pc.take(ranked, int64_array(np.flatnonzero(start)), memory_pool=pool),
                    pa.string(), memory_pool=pool)
    del ranked
    task = np.cumsum(start, dtype=np.int64) - 1
    del start
    perm = values(order).astype(np.int64)
    del order
    trial = values(table.column("trial").combine_chunks(memory_pool=pool))
    trial = trial.astype(np.int64, copy=False)[perm]
    if np.any((task[1:] == task[:-1]) & (trial[1:] < trial[:-1])):
        within = np.lexsort((trial, task))
        perm, task, trial = perm[within], task[within], trial[within]
    column = pc.cast(table.column("reward").combine_chunks(memory_pool=pool), pa.float64(),
                     memory_pool=pool)
    scored = valid(column)[perm]
    reward = values(column, fill=float("nan"))[perm]
    del column
    lost = values(table.column("lost").combine_chunks(memory_pool=pool), fill=False)
    return EvalRows(names=names, task=task, trial=trial, reward=reward, scored=scored,
                    lost=lost.astype(bool, copy=False)[perm])

