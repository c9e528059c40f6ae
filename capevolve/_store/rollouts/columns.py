"""The storage boundary for rows that arrive as columns, checked column-wise."""

from __future__ import annotations

import datetime as dt
import functools
import math
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from capevolve._store.lazy import pc
from capevolve._store.rollouts.schema import (
    _INT32,
    _INT64,
    _KINDS,
    COLUMNS,
    ROLLOUT_SCHEMA,
    _parts,
    rows_to_table,
)

_NONE = type(None)
_KEY_TEXT = ("run_id", "eval_id", "split", "candidate_id", "candidate_hash")
_TIMES = ("started_at", "finished_at")


@functools.cache
def _kind_set() -> pa.Array:
    """The valid error kinds as Arrow, built on first use (it may import pandas)."""
    return pa.array(sorted(_KINDS), pa.string())


class _Suspect(Exception):
    """Some value of the batch needs ``storable_row``'s full check."""


def columns_to_table(columns: Mapping[str, Any], n: int) -> pa.Table:
    """The batch as a checked table, stored as ``storable_row`` would; RecordError for a bad key."""
    try:
        return _fast(columns, n)
    except _Suspect:
        return rows_to_table(column_rows(columns, n))


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
    """Finite POSIX seconds as datetimes; other values kept for storable_row to judge."""
    ok = [type(v) in (float, int) and math.isfinite(v) for v in values]
    stamps = _times([v if good else None for v, good in zip(values, ok, strict=True)],
                    len(values)).to_pylist()
    return [s if good else v for v, s, good in zip(values, stamps, ok, strict=True)]


def _times(values: Sequence[Any], n: int) -> pa.Array:
    """POSIX seconds as microsecond UTC timestamps."""
    seconds = pa.array(values, pa.float64())
    if len(seconds) != n:
        raise _Suspect
    if seconds.null_count < n and not pc.all(pc.is_finite(seconds)).as_py():
        raise _Suspect
    micros = pc.cast(pc.round(pc.multiply(seconds, 1e6)), pa.int64())
    return micros.cast(pa.timestamp("us", tz="UTC"))


def _column(name: str, value: Any, n: int) -> pa.Array:
    """One column as Arrow, or _Suspect when a value needs the full check."""
    field = ROLLOUT_SCHEMA.field(name)
    if not isinstance(value, (list, tuple)):
        if name in _KEY_TEXT or name in ("schema_version", "task_id", "trial", "seed"):
            if value is None:
                raise _Suspect
        value = [value] * n
    if len(value) != n:
        raise _Suspect
    types = set(map(type, value))
    if name in _TIMES:
        if types <= {float, int, _NONE} and bool not in types:
            return _times(value, n)
        if types <= {dt.datetime, _NONE} and all(v is None or v.tzinfo is not None
                                                 for v in value):
            return pa.array(value, field.type)
        raise _Suspect
    if field.type == pa.string():
        if not types <= {str, _NONE}:
            raise _Suspect
        try:
            array = pa.array(value, pa.string())  # a lone surrogate raises here
        except (UnicodeEncodeError, pa.ArrowException):
            raise _Suspect from None
        if name in _KEY_TEXT or name == "task_id":
            if array.null_count or pc.any(pc.equal(pc.utf8_length(array), 0)).as_py():
                raise _Suspect  # storable_row names the empty or missing key
        return array
    if field.type == pa.float64():
        if not types <= {float, _NONE}:
            raise _Suspect  # ints, bools, strings: storable_row converts or refuses
        array = pa.array(value, pa.float64())
        if array.null_count < n:
            high = 1.0 if name == "reward" else float("inf")
            ok = pc.and_(pc.greater_equal(array, 0.0), pc.less(array, high)
                         if high == float("inf") else pc.less_equal(array, high))
            if not pc.all(ok).as_py():  # NaN fails every comparison
                raise _Suspect
        return array
    # integers: schema_version, trial, seed, attempts, tokens
    if not types <= {int, _NONE}:
        raise _Suspect  # bools and floats included
    low, high = {"schema_version": (1, _INT32[1]), "trial": _INT32, "seed": _INT64,
                 "attempts": (0, _INT32[1]), "tokens": (0, _INT64[1]),
                 "unknown_attempts": (0, _INT64[1]), "judge_tokens": (0, _INT64[1])}[name]
    if name == "attempts" and _NONE in types:
        raise _Suspect  # storable_row stores a missing attempts as 0
    if _NONE in types and not field.nullable:
        raise _Suspect
    try:
        wide = pa.array(value, pa.int64())
    except OverflowError:
        raise _Suspect from None
    if wide.null_count < n:
        bounds = pc.min_max(wide).as_py()
        if bounds["min"] < low or bounds["max"] > high:
            raise _Suspect
    return wide.cast(field.type) if field.type != pa.int64() else wide


def _fast(columns: Mapping[str, Any], n: int) -> pa.Table:
    arrays = {name: _column(name, columns.get(name), n) for name in COLUMNS
              if name not in ("error", "error_kind")}
    error = _column("error", columns.get("error"), n)
    kind = _column("error_kind", columns.get("error_kind"), n)
    if error.null_count < n:  # (valid UTF-8 error text is stored as it is)
        has_error = pc.is_valid(error)
        if not pc.all(pc.equal(has_error, pc.is_valid(kind))).as_py():
            raise _Suspect  # an error without a kind, or a kind without an error
        if not pc.all(pc.is_in(kind.drop_null(), value_set=_kind_set())).as_py():
            raise _Suspect
        if pc.any(pc.and_(has_error, pc.or_(pc.is_valid(arrays["reward"]),
                                            pc.is_valid(arrays["score_parts"])))).as_py():
            raise _Suspect  # storable_row clears reward and parts of an error row
    elif kind.null_count < n:
        raise _Suspect
    missing = pc.is_null(arrays["reward"])
    if error.null_count < n:
        missing = pc.and_(missing, pc.is_null(error))
    if pc.any(missing).as_py():
        raise _Suspect  # a row with neither reward nor error
    parts = columns.get("score_parts")
    if arrays["score_parts"].null_count < n and isinstance(parts, (list, tuple)):
        if any(_parts(v)[1] is not None for v in parts if v is not None):
            raise _Suspect  # the JSON of named numbers is checked value by value
    elif arrays["score_parts"].null_count < n:
        raise _Suspect
    arrays["error"], arrays["error_kind"] = error, kind
    return pa.Table.from_arrays([arrays[name] for name in COLUMNS], schema=ROLLOUT_SCHEMA)
