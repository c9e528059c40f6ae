"""Rows that arrive as columns, as the row dicts ``storable_row`` checks."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from capevolve._store.lazy import pc
from capevolve._store.rollouts.schema import COLUMNS

_TIMES = ("started_at", "finished_at")


def column_rows(columns: Mapping[str, Any], n: int) -> list[dict]:
    """The batch as row dicts; scalars repeated, POSIX seconds as UTC datetimes."""
    lists: dict[str, Sequence[Any]] = {}
    for name in COLUMNS:
        value = columns.get(name)
        if isinstance(value, (list, tuple)):
            lists[name] = _seconds_to_datetimes(value) if name in _TIMES else value
        else:
            lists[name] = [value] * n
    return [{name: lists[name][i] for name in COLUMNS} for i in range(n)]


def _seconds_to_datetimes(values: Sequence[Any]) -> list[Any]:
    """Finite POSIX seconds as microsecond UTC datetimes; other values kept for storable_row
    to judge."""
    ok = [type(v) in (float, int) and math.isfinite(v) for v in values]
    seconds = pa.array([v if good else None for v, good in zip(values, ok, strict=True)],
                       pa.float64())
    micros = pc.cast(pc.round(pc.multiply(seconds, 1e6)), pa.int64())
    stamps = micros.cast(pa.timestamp("us", tz="UTC")).to_pylist()
    return [s if good else v for v, s, good in zip(values, stamps, ok, strict=True)]
