"""The versioned Arrow schema of a rollout row, and the checks a stored value passes.

Column names are an interface; structured values are stored as JSON text.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import operator
from collections.abc import Callable, Mapping
from typing import Any

import pyarrow as pa

from capevolve.errors import RecordError
from capevolve.kinds import ErrorKind

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
    pa.field("model", pa.string()),  # the model id(s) the endpoint reported
    pa.field("model_settings", pa.string()),  # JSON of the pinned agent model settings
    pa.field("usage", pa.string()),  # JSON of the unit's model meter (every attempt)
    pa.field("unknown_attempts", pa.int64()),  # model calls with unknown tokens
    pa.field("judge_tokens", pa.int64()),
    pa.field("judge_cost_usd", pa.float64()),
    pa.field("model_failure", pa.string()),  # why the model calls failed (ModelFailure)
], metadata={b"capevolve.schema_version": str(SCHEMA_VERSION).encode()})

COLUMNS = tuple(ROLLOUT_SCHEMA.names)

_INT32 = (0, 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)
_KINDS = frozenset(str(kind) for kind in ErrorKind)
MAX_SHOWN = 60
"""Characters of a bad value quoted in a message."""


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= MAX_SHOWN else text[:MAX_SHOWN] + "..."


def text_problem(value: Any) -> str | None:
    """Why ``value`` cannot be stored as text, or None."""
    if not isinstance(value, str):
        return f"{_shown(value)} is {type(value).__name__}, not text"
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            return (f"{_shown(value[exc.start])} at index {exc.start} is a lone surrogate "
                    "(not encodable as UTF-8)")
    return None


def _integer(value: Any, low: int, high: int) -> tuple[Any, str | None]:
    if isinstance(value, bool):
        return None, f"{value!r} is bool, not an integer"
    try:
        number = operator.index(value)
    except TypeError:
        return None, f"{_shown(value)} is {type(value).__name__}, not an integer"
    if not low <= number <= high:
        return None, (f"{number} is negative" if number < 0 <= low
                      else f"{number} is outside [{low}, {high}]")
    return number, None


def _real(value: Any, low: float, high: float) -> tuple[Any, str | None]:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None, f"{_shown(value)} is {type(value).__name__}, not a number"
    number = float(value)
    if not math.isfinite(number):
        return None, f"{number!r} is not a finite number"
    if not low <= number <= high:
        return None, (f"{number!r} is negative" if number < 0 <= low
                      else f"{number!r} is outside [{low:g}, {high:g}]")
    return number, None


def _text(value: Any) -> tuple[Any, str | None]:
    problem = text_problem(value)
    return (None, problem) if problem else (value, None)


def _time(value: Any) -> tuple[Any, str | None]:
    if not isinstance(value, dt.datetime):
        return None, f"{_shown(value)} is {type(value).__name__}, not a datetime"
    if value.tzinfo is None:
        return None, f"{value.isoformat()} has no time zone"
    return value, None


def _parts(value: Any) -> tuple[Any, str | None]:
    problem = text_problem(value)
    if problem:
        return None, problem
    try:
        parts = json.loads(value, parse_constant=lambda c: math.nan)
    except ValueError:
        return None, "not JSON text"
    if not isinstance(parts, dict):
        return None, f"a JSON {type(parts).__name__}, not an object of named numbers"
    for name, part in parts.items():
        _, why = _real(part, -math.inf, math.inf)
        if why:
            return None, f"part {_shown(name)}: {why}"
    return value, None


_Check = Callable[[Any], tuple[Any, "str | None"]]


def _fine_text(v: Any) -> bool:
    return type(v) is str and v.isascii()


def _fine_unit(v: Any) -> bool:
    return type(v) is float and 0.0 <= v <= 1.0  # NaN fails every comparison


def _fine_positive(v: Any) -> bool:
    return type(v) is float and 0.0 <= v < math.inf


def _fine_count(v: Any) -> bool:
    return type(v) is int and 0 <= v <= _INT64[1]


def _fine_time(v: Any) -> bool:
    return type(v) is dt.datetime and v.tzinfo is not None


def _never(v: Any) -> bool:
    return False


_VALUES: tuple[tuple[str, Callable[[Any], bool], _Check], ...] = (
    ("reward", _fine_unit, lambda v: _real(v, 0.0, 1.0)),
    ("feedback", _fine_text, _text), ("score_parts", _never, _parts),
    ("output", _fine_text, _text), ("inputs", _fine_text, _text),
    ("tool_calls", _fine_text, _text), ("trace", _fine_text, _text),
    ("trajectory", _fine_text, _text),
    ("latency_s", _fine_positive, lambda v: _real(v, 0.0, math.inf)),
    ("tokens", _fine_count, lambda v: _integer(v, 0, _INT64[1])),
    ("cost_usd", _fine_positive, lambda v: _real(v, 0.0, math.inf)),
    ("worker_id", _fine_text, _text), ("node_id", _fine_text, _text),
    ("started_at", _fine_time, _time), ("finished_at", _fine_time, _time),
    ("model", _fine_text, _text), ("model_settings", _fine_text, _text),
    ("usage", _fine_text, _text), ("model_failure", _fine_text, _text),
    ("unknown_attempts", _fine_count, lambda v: _integer(v, 0, _INT64[1])),
    ("judge_tokens", _fine_count, lambda v: _integer(v, 0, _INT64[1])),
    ("judge_cost_usd", _fine_positive, lambda v: _real(v, 0.0, math.inf)),
)
"""Per nullable value column: a fast test that a value is fine, and its full check."""


def _key_columns(row: dict) -> None:
    """RecordError for a bad key column."""
    for name in ("run_id", "eval_id", "split", "candidate_id", "candidate_hash", "task_id"):
        value = row[name]
        if _fine_text(value) and value:
            continue
        problem = text_problem(value) or (None if value else "empty")
        if problem:
            raise RecordError(f"rollout row: key column {name!r}: {problem}")
    for name, (low, high) in (("schema_version", (1, _INT32[1])), ("trial", _INT32),
                              ("seed", _INT64)):
        if type(row[name]) is int and low <= row[name] <= high:
            continue
        row[name], problem = _integer(row[name], low, high)
        if problem:
            raise RecordError(f"rollout row {row['task_id']!r}: key column {name!r}: {problem}")


def safe_text(text: str) -> str:
    """``text`` with lone surrogates escaped, for messages."""
    return text if text.isascii() else text.encode("utf-8", "backslashreplace").decode()


def storable_row(row: Mapping[str, Any]) -> dict:
    """The row as stored: the schema's columns; a bad value makes it an invalid_value error."""
    out = {name: row.get(name) for name in COLUMNS}
    _key_columns(out)
    problems: list[str] = []
    for name, fine, check in _VALUES:
        value = out[name]
        if value is not None and not fine(value):
            out[name], problem = check(value)
            if problem:
                problems.append(f"{name!r}: {problem}")
    out["attempts"], problem = _integer(out["attempts"] if out["attempts"] is not None
                                        else 0, *_INT32)
    if problem:
        out["attempts"] = 0
        problems.append(f"'attempts': {problem}")
    error, kind = out["error"], out["error_kind"]
    if error is not None and not isinstance(error, str):
        error = f"(an error of type {type(error).__name__})"
    if error is not None:
        error = safe_text(error)
        if kind not in _KINDS:
            problems.append(f"'error_kind': {_shown(kind)} is not an error kind")
    elif kind is not None:
        problems.append(f"'error_kind': {_shown(kind)} without an error")
    elif out["reward"] is None and not problems:
        problems.append("'reward': missing, and the row has no error")
    if problems:
        kind, earlier = ErrorKind.INVALID_VALUE, f"; the unit's own error: {error}" if error else ""
        error = "invalid value in column " + "; in column ".join(problems) + earlier
    if error is not None:
        out.update(reward=None, score_parts=None, error=error, error_kind=str(kind))
    return out


def rows_to_table(rows: list[dict]) -> pa.Table:
    """A table of every row's :func:`storable_row`, missing keys null."""
    checked = [storable_row(row) for row in rows]
    columns = {name: [row[name] for row in checked] for name in COLUMNS}
    return pa.Table.from_pydict(columns, schema=ROLLOUT_SCHEMA)
