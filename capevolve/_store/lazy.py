"""DuckDB, pyarrow.compute and pyarrow.parquet, imported at first use: an evaluation reaches its
first rollout without them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from capevolve._lazy import lazy_module

__all__ = ["duckdb", "pc", "pq"]

if TYPE_CHECKING:
    import duckdb
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
else:
    duckdb = lazy_module("duckdb")
    pc = lazy_module("pyarrow.compute")
    pq = lazy_module("pyarrow.parquet")
