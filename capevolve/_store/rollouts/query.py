"""DuckDB over the run's Parquet parts: the ``rollouts`` view and the queries stats need.

The Parquet files are the source of truth; DuckDB runs in memory over them, so any number
of readers can query a run while a driver writes it. A unit's row is counted once even if
it was written twice: a scored row wins over an errored one (a retry after an outage),
then the first finished.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pyarrow as pa

from capevolve.errors import StoreError
from capevolve._store.layout import Layout
from capevolve._store.rollouts.schema import ROLLOUT_SCHEMA

PARQUET_MAGIC = b"PAR1"


def _is_complete_part(path: Path) -> bool:
    """Cheap structural check: a Parquet file starts and ends with the magic bytes."""
    try:
        size = path.stat().st_size
        if size < 12:
            return False
        with open(path, "rb") as fh:
            head = fh.read(4)
            fh.seek(-4, os.SEEK_END)
            tail = fh.read(4)
        return head == PARQUET_MAGIC and tail == PARQUET_MAGIC
    except OSError:
        return False


def quarantine_bad_parts(layout: Layout) -> list[Path]:
    """Move truncated parts out of the rollouts tree (so their units count as missing)."""
    moved = []
    for path in sorted(layout.rollouts.rglob("*.parquet")):
        if not _is_complete_part(path):
            target = layout.quarantine() / path.relative_to(layout.rollouts)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(path, target)
            moved.append(target)
    return moved


@dataclass
class TaskOutcomes:
    """Per-task trial outcomes of one evaluation, read from stored rows."""

    rewards: dict[str, list[float]] = field(default_factory=dict)  # valid rewards by task
    errors: dict[str, int] = field(default_factory=dict)  # errored trials by task
    n_rows: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    cost_unrecorded: int = 0


class RolloutStore:
    """Read access to a run's rollouts through DuckDB."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout

    def connect(self, eval_id: str | None = None) -> duckdb.DuckDBPyConnection:
        """An in-memory DuckDB connection with a deduplicated ``rollouts`` view.

        With ``eval_id`` the view reads only that evaluation's parts (their file names
        start with the eval id), which keeps per-evaluation statistics fast in big runs.
        """
        con = duckdb.connect(":memory:")
        name = f"{eval_id}-*.parquet" if eval_id else "*.parquet"
        glob = str(self.layout.rollouts / "**" / name)
        if any(self.layout.rollouts.rglob(name)):
            source = (f"read_parquet('{_sql_quote(glob)}', hive_partitioning=true, "
                      "union_by_name=true, hive_types_autocast=false)")
        else:
            con.register("_empty_rollouts", pa.Table.from_pylist([], schema=ROLLOUT_SCHEMA))
            source = "_empty_rollouts"
        con.execute(f"""
            CREATE VIEW rollouts AS
            SELECT * EXCLUDE (_rank) FROM (
                SELECT *, row_number() OVER (
                    PARTITION BY eval_id, task_id, trial
                    ORDER BY (reward IS NULL), finished_at, worker_id
                ) AS _rank FROM {source}
            ) WHERE _rank = 1
        """)
        return con

    def query(self, sql: str, eval_id: str | None = None) -> tuple[list[str], list[tuple]]:
        """Run any SQL over the ``rollouts`` view (optionally one evaluation's parts);
        returns (column names, rows)."""
        try:
            con = self.connect(eval_id)
        except duckdb.Error as exc:
            raise StoreError(f"rollouts unreadable: {str(exc).splitlines()[0]}") from None
        try:
            cursor = con.execute(sql)
            names = [d[0] for d in cursor.description] if cursor.description else []
            return names, cursor.fetchall()
        except duckdb.Error as exc:
            raise StoreError(f"query failed: {str(exc).splitlines()[0]}") from None
        finally:
            con.close()

    def done_units(self, eval_id: str, valid_only: bool = False) -> set[tuple[str, int]]:
        """(task_id, trial) pairs of an evaluation that have a stored row (with
        ``valid_only``, a scored row: errored units then count as not done)."""
        where = " AND reward IS NOT NULL" if valid_only else ""
        _, rows = self.query(
            f"SELECT task_id, trial FROM rollouts WHERE eval_id = '{_sql_quote(eval_id)}'"
            + where, eval_id)
        return {(task_id, int(trial)) for task_id, trial in rows}

    def outcomes(self, eval_id: str) -> TaskOutcomes:
        """Valid rewards and error counts per task of one evaluation (one query)."""
        _, rows = self.query(f"""
            SELECT task_id,
                   list(reward ORDER BY trial) FILTER (WHERE reward IS NOT NULL),
                   count(*) FILTER (WHERE reward IS NULL),
                   count(*), coalesce(sum(tokens), 0), coalesce(sum(cost_usd), 0),
                   count(*) FILTER (WHERE cost_usd IS NULL)
            FROM rollouts WHERE eval_id = '{_sql_quote(eval_id)}'
            GROUP BY task_id ORDER BY task_id
        """, eval_id)
        out = TaskOutcomes()
        for task_id, rewards, n_errors, n_rows, tokens, cost, unrecorded in rows:
            out.rewards[task_id] = [float(r) for r in (rewards or [])]
            if n_errors:
                out.errors[task_id] = int(n_errors)
            out.n_rows += int(n_rows)
            out.tokens += int(tokens)
            out.cost_usd += float(cost)
            out.cost_unrecorded += int(unrecorded)
        return out


def _sql_quote(text: str) -> str:
    return str(text).replace("'", "''")
