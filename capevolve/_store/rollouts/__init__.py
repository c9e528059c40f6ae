"""Rollout storage: a Parquet row per work unit, read through a confined DuckDB."""
