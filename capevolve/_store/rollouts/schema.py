"""The Arrow schema of a rollout row (one row per work unit).

Column names are an interface: other tools read the Parquet files. Structured values
(inputs, tool calls, trace, score parts) are stored as canonical JSON text. The schema is
versioned: every row carries ``schema_version``.
"""

from __future__ import annotations

import pyarrow as pa

SCHEMA_VERSION = 1

_TS = pa.timestamp("us", tz="UTC")

ROLLOUT_SCHEMA = pa.schema([
    pa.field("schema_version", pa.int32(), nullable=False),
    pa.field("run_id", pa.string(), nullable=False),
    pa.field("eval_id", pa.string(), nullable=False),
    pa.field("split", pa.string(), nullable=False),
    pa.field("candidate_id", pa.string(), nullable=False),
    pa.field("candidate_hash", pa.string(), nullable=False),
    pa.field("task_id", pa.string(), nullable=False),
    pa.field("trial", pa.int32(), nullable=False),
    pa.field("seed", pa.int64(), nullable=False),
    pa.field("reward", pa.float64()),  # null when errored: missing data, never 0
    pa.field("feedback", pa.string()),
    pa.field("score_parts", pa.string()),  # JSON object
    pa.field("output", pa.string()),
    pa.field("inputs", pa.string()),  # JSON of Task.input
    pa.field("tool_calls", pa.string()),  # JSON list of {name, arguments, mutates}
    pa.field("trace", pa.string()),  # JSON of Rollout.trace
    pa.field("trajectory", pa.string()),
    pa.field("error", pa.string()),
    pa.field("error_kind", pa.string()),
    pa.field("attempts", pa.int32(), nullable=False),
    pa.field("latency_s", pa.float64()),
    pa.field("tokens", pa.int64()),
    pa.field("cost_usd", pa.float64()),  # null when unknown, never 0 for unknown
    pa.field("worker_id", pa.string()),
    pa.field("node_id", pa.string()),
    pa.field("started_at", _TS),
    pa.field("finished_at", _TS),
], metadata={b"capevolve.schema_version": str(SCHEMA_VERSION).encode()})

COLUMNS = tuple(ROLLOUT_SCHEMA.names)


def rows_to_table(rows: list[dict]) -> pa.Table:
    """Build a table in the canonical column order from row dicts (missing keys are null)."""
    columns = {name: [row.get(name) for row in rows] for name in COLUMNS}
    return pa.Table.from_pydict(columns, schema=ROLLOUT_SCHEMA)
