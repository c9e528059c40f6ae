"""Rollout storage: one Parquet row per work unit, read back through a confined DuckDB.

- :mod:`.schema`: the Arrow schema of a row (versioned; column names are an interface);
- :mod:`.writer`: durable parts, written under a temporary name and renamed into place;
- :mod:`.query`: the deduplicated ``rollouts`` view (one fixed rule for duplicate units) and
  the queries the verbs need;
- :mod:`.confine`: what a query may do (one read-only SELECT over the run's parts).
"""
