"""One evaluation's rows grouped by task: what the gate reads, in one cached query."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from capevolve._store.layout import Layout
from capevolve._store.lazy import pc
from capevolve._store.rollouts.arrow_numpy import values
from capevolve._store.rollouts.parts_cache import PartsCache
from capevolve._store.rollouts.query import RolloutStore

CACHED = 16
"""Evaluations kept per process (LRU)."""

_SQL = """
    SELECT task_id,
           coalesce(list(reward ORDER BY trial) FILTER (WHERE reward IS NOT NULL),
                    []::DOUBLE[]) AS rewards,
           list(DISTINCT trial) AS trials,
           array_to_string(list_sort(list_distinct(
               list(sha256(coalesce(output, ''))) FILTER (WHERE reward IS NOT NULL))), ','
           ) AS outputs
    FROM rollouts WHERE eval_id = $eval_id GROUP BY task_id ORDER BY task_id
"""
# ORDER BY: DuckDB compares strings by their UTF-8 bytes, which is Python's code point
# order, so the Python check in ``_columns`` finds them sorted and takes nothing


@dataclass(frozen=True)
class TaskRows:
    """Valid rewards of ``tasks[i]`` (sorted) are ``reward[offsets[i]:offsets[i + 1]]``.

    ``trials``: every stored trial index; ``outputs[i]``: distinct digests of scored outputs.
    """

    tasks: tuple[str, ...]
    offsets: np.ndarray  # int64, len(tasks) + 1
    reward: np.ndarray  # float64, valid rewards task by task, in trial order
    trials: frozenset[int]
    outputs: tuple[str | None, ...]

    def rewards(self) -> dict[str, list[float]]:
        """Task -> its valid rewards in trial order."""
        values, bounds = self.reward.tolist(), self.offsets.tolist()
        return {t: values[bounds[i]:bounds[i + 1]] for i, t in enumerate(self.tasks)}


_CACHE: PartsCache[TaskRows] = PartsCache(CACHED)


def task_rows(layout: Layout, eval_id: str) -> TaskRows:
    """``eval_id``'s rows by task, cached while its parts are unchanged; else StoreError."""
    def empty() -> TaskRows:
        return TaskRows((), np.zeros(1, dtype=np.int64), np.zeros(0), frozenset(), ())

    def read() -> TaskRows:
        return _columns(RolloutStore(layout).table(_SQL, eval_id, params={"eval_id": eval_id}))

    return _CACHE.get(layout, eval_id, empty, read)


def prefetch(layout: Layout, eval_ids: Sequence[str]) -> Future[None]:
    """Read ``eval_ids``' :func:`task_rows` in threads; ``.result()`` raises the first failure."""
    pool = ThreadPoolExecutor(max_workers=max(1, len(eval_ids)),
                              thread_name_prefix="capevolve-read")
    reads = [pool.submit(task_rows, layout, e) for e in eval_ids]
    pool.shutdown(wait=False)
    done: Future[None] = Future()

    def settle(_: object) -> None:
        if all(r.done() for r in reads) and not done.done():
            failed = next((r.exception() for r in reads if r.exception()), None)
            if failed is None:
                done.set_result(None)
            else:
                done.set_exception(failed)

    for read in reads:
        read.add_done_callback(settle)
    if not reads:
        done.set_result(None)
    return done


def _columns(table: pa.Table) -> TaskRows:
    ids = table.column("task_id").to_pylist()
    order = sorted(range(len(ids)), key=ids.__getitem__)  # Python's order, not a collation
    if order != list(range(len(ids))):
        table = table.take(pa.array(order, pa.int64()))
        ids = [ids[i] for i in order]
    lists = table.column("rewards").combine_chunks().cast(pa.list_(pa.float64()))
    counts = values(pc.list_value_length(lists), fill=0).astype(np.int64)  # null: none
    offsets = np.zeros(len(ids) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    reward = values(pc.list_flatten(lists)).astype(np.float64)
    trials = pc.unique(pc.list_flatten(table.column("trials").combine_chunks())).to_pylist()
    return TaskRows(tasks=tuple(str(t) for t in ids), offsets=offsets, reward=reward,
                    trials=frozenset(int(k) for k in trials),
                    outputs=tuple(table.column("outputs").to_pylist()))
