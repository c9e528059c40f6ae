"""Confining DuckDB to reading one run's rollout parts."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from capevolve._store.lazy import duckdb
from capevolve.errors import StoreError

ALLOWED_STATEMENTS = frozenset({"SELECT"})
"""``duckdb.StatementType`` names a query may run."""

_SETTINGS = (
    "SET temp_directory = ''",  # never spill to disk: a query writes nothing anywhere
    "SET autoinstall_known_extensions = false",
    "SET autoload_known_extensions = false",
    "SET allow_community_extensions = false",
    "SET enable_external_access = false",
    "SET lock_configuration = true",
)


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def sql_literal(text: str) -> str:
    """``text`` as a SQL string literal."""
    return "'" + str(text).replace("'", "''") + "'"


def read_only_statement(con: duckdb.DuckDBPyConnection, sql: str) -> None:
    """Refuse ``sql`` unless it is exactly one SELECT statement."""
    try:
        statements = con.extract_statements(sql)
    except duckdb.Error as exc:
        raise StoreError(f"query failed: {first_line(exc)}") from None
    if not statements:
        raise StoreError("query refused: no SQL statement given")
    if len(statements) > 1:
        kinds = ", ".join(s.type.name for s in statements)
        raise StoreError(f"query refused: {len(statements)} statements ({kinds}); "
                         "query runs exactly one read-only SELECT")
    kind = statements[0].type
    if kind.name not in ALLOWED_STATEMENTS:
        raise StoreError(f"query refused: {kind.name} statements are not allowed; "
                         "query is read-only (one SELECT over the `rollouts` view)")


def lock_down(con: duckdb.DuckDBPyConnection, readable: Sequence[Path]) -> None:
    """Allow reading only ``readable``, then lock the configuration."""
    paths = ", ".join(sql_literal(str(p)) for p in readable)
    con.execute(f"SET allowed_paths = [{paths}]")
    con.execute("SET allowed_directories = []")
    for statement in _SETTINGS:
        con.execute(statement)
