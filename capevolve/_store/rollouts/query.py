"""Confined DuckDB over the run's Parquet parts: the ``rollouts`` view and its queries.

A row counts only in the part its evaluation and candidate name. One row per (eval, task, trial)
by one order: scored before errored, earliest ``finished_at``, part path, row.
"""

from __future__ import annotations

import glob
import os
from pathlib import Path
from typing import Any

import pyarrow as pa

from capevolve._store.layout import Layout
from capevolve._store.lazy import duckdb
from capevolve._store.rollouts.confine import (
    first_line,
    lock_down,
    read_only_statement,
    sql_literal,
)
from capevolve._store.rollouts.schema import ROLLOUT_SCHEMA
from capevolve.errors import StoreError

PARQUET_MAGIC = b"PAR1"
PART_GLOB = "split=*/candidate=*/*.parquet"

DEDUP_ORDER = ("(reward IS NULL), finished_at ASC NULLS LAST, "
               "_part ASC, _part_row ASC")
"""The one tie-breaking rule for duplicate units."""


def _is_complete_part(path: Path) -> bool:
    """Whether the file starts and ends with the Parquet magic bytes."""
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
    """Move truncated parts to quarantine; their units count as missing."""
    moved = []
    for path in sorted(layout.rollouts.rglob("*.parquet")):
        if not _is_complete_part(path):
            target = layout.quarantine() / path.relative_to(layout.rollouts)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(path, target)
            moved.append(target)
    return moved


def candidate_part_files(layout: Layout, candidate_id: str) -> list[Path]:
    """One candidate's parts over every split, sorted."""
    if not layout.rollouts.is_dir():
        return []
    pattern = f"split=*/candidate={glob.escape(candidate_id)}/*.parquet"
    return sorted(p for p in layout.rollouts.glob(pattern)
                  if p.is_file() and p.parent.name == f"candidate={candidate_id}")


def part_files(layout: Layout, eval_id: str | None = None) -> list[Path]:
    """The run's parts, or one evaluation's, sorted."""
    if not layout.rollouts.is_dir():
        return []
    if eval_id is None:
        return sorted(p for p in layout.rollouts.glob(PART_GLOB) if p.is_file())
    pattern = f"split=*/candidate=*/{glob.escape(eval_id)}-*.parquet"
    return sorted(p for p in layout.rollouts.glob(pattern)
                  if p.is_file() and p.name.startswith(f"{eval_id}-"))


class _PartsMoved(Exception):
    """A listed part was removed before it was read."""


class RolloutStore:
    """Read-only, confined DuckDB access to a run's rollouts."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self._last_parts: dict[str | None, list[Path]] = {}  # what connect() listed last

    def connect(self, eval_id: str | None = None, *, candidate_id: str | None = None,
                every_row: bool = False) -> duckdb.DuckDBPyConnection:
        """A confined in-memory connection with the deduplicated ``rollouts`` view."""
        con = duckdb.connect(":memory:")
        parts = (part_files(self.layout, eval_id) if candidate_id is None or eval_id
                 else candidate_part_files(self.layout, candidate_id))
        self._last_parts[eval_id] = parts
        if parts:
            files = ", ".join(sql_literal(str(p)) for p in parts)
            source = (f"read_parquet([{files}], hive_partitioning=true, union_by_name=true, "
                      "hive_types_autocast=false, filename='_part', file_row_number=true)")
            rank_source = (f"SELECT *, file_row_number AS _part_row FROM {source} "
                           "WHERE starts_with(parse_filename(_part), eval_id || '-') "
                           "AND candidate = candidate_id")
            drop = "_part, _part_row, file_row_number"
        else:
            con.register("_empty_rollouts", pa.Table.from_pylist([], schema=ROLLOUT_SCHEMA))
            rank_source = ("SELECT *, NULL::VARCHAR AS _part, NULL::BIGINT AS _part_row "
                           "FROM _empty_rollouts")
            drop = "_part, _part_row"
        if parts and not every_row and _has_duplicates(con, rank_source):
            con.execute(f"""
                CREATE VIEW rollouts AS
                SELECT * EXCLUDE (_rank, {drop}) FROM (
                    SELECT *, row_number() OVER (
                        PARTITION BY eval_id, task_id, trial ORDER BY {DEDUP_ORDER}
                    ) AS _rank FROM ({rank_source})
                ) WHERE _rank = 1
            """)
        else:  # every unit has one row: the rule picks each one, no ranking needed
            con.execute(f"CREATE VIEW rollouts AS SELECT * EXCLUDE ({drop}) "
                        f"FROM ({rank_source})")
        lock_down(con, parts)
        return con

    def query(self, sql: str, eval_id: str | None = None) -> tuple[list[str], list[tuple]]:
        """(column names, rows) of one read-only SELECT over ``rollouts``; else StoreError."""
        return self._read(sql, eval_id)

    def table(self, sql: str, eval_id: str | None = None, *, candidate_id: str | None = None,
              every_row: bool = False, params: dict[str, Any] | None = None) -> pa.Table:
        """:meth:`query` as an Arrow table; ``candidate_id`` reads that candidate's parts only,
        ``every_row`` as in :meth:`connect`, ``params`` bind the SQL's ``$names``."""
        return self._read(sql, eval_id, arrow=True, candidate_id=candidate_id,
                          every_row=every_row, params=params)

    def _read(self, sql: str, eval_id: str | None, **how: Any) -> Any:
        """:meth:`_query_once`, read again while a compaction moves the listed parts."""
        for attempt in range(3):
            try:
                return self._query_once(sql, eval_id, **how)
            except _PartsMoved:
                if attempt == 2:
                    raise StoreError("rollouts unreadable: parts kept changing while they "
                                     "were read (a compaction); try again") from None
        raise AssertionError("unreachable")

    def _query_once(self, sql: str, eval_id: str | None, arrow: bool = False,
                    candidate_id: str | None = None, every_row: bool = False,
                    params: dict[str, Any] | None = None) -> Any:
        try:
            con = self.connect(eval_id, candidate_id=candidate_id, every_row=every_row)
        except duckdb.Error as exc:
            raise self._unreadable("rollouts unreadable", exc, eval_id) from None
        try:
            read_only_statement(con, sql)
            if arrow:  # DuckDB 2 names it to_arrow_table, 1.x arrow (pyproject: duckdb>=1.1)
                relation = con.sql(sql, params=params)
                return (getattr(relation, "to_arrow_table", None) or relation.arrow)()
            cursor = con.execute(sql)
            names = [d[0] for d in cursor.description] if cursor.description else []
            return names, cursor.fetchall()
        except duckdb.Error as exc:
            raise self._unreadable("query failed", exc, eval_id) from None
        finally:
            con.close()

    def _unreadable(self, what: str, exc: duckdb.Error, eval_id: str | None) -> Exception:
        """A one-line StoreError, or _PartsMoved (read again) when a listed part is gone."""
        if isinstance(exc, duckdb.IOException) and \
                not all(p.is_file() for p in self._last_parts.get(eval_id, [])):
            return _PartsMoved()
        return StoreError(f"{what}: {first_line(exc)}")


def _has_duplicates(con: duckdb.DuckDBPyConnection, rank_source: str) -> bool:
    """Whether some unit has several counted rows."""
    row = con.execute(f"SELECT count(*) > count(DISTINCT (eval_id, task_id, trial)) "
                      f"FROM ({rank_source})").fetchone()
    return bool(row and row[0])
