"""Rollout storage: the Arrow schema, atomic Parquet parts, and DuckDB queries."""
