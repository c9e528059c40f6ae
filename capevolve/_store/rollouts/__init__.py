"""Rollout storage: one Parquet row per work unit, read back through a confined DuckDB."""
