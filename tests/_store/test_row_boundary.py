"""The storage boundary (capevolve._store.rollouts.schema.storable_row): every value of a
rollout row is checked, however the row was built; a bad value is an invalid_value error
row naming the column, and a Parquet part written from a mixed batch keeps every row."""

import datetime as dt
import math

import pyarrow.parquet as pq
import pytest

from capevolve._store.rollouts.schema import (
    COLUMNS,
    SCHEMA_VERSION,
    rows_to_table,
    storable_row,
)
from capevolve._store.rollouts.writer import write_part
from capevolve.errors import RecordError
from capevolve.kinds import ErrorKind

T0 = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)


def _row(task_id: str = "t0", **values) -> dict:
    return {"schema_version": SCHEMA_VERSION, "run_id": "r", "eval_id": "val__seed__k1",
            "split": "val", "candidate_id": "seed", "candidate_hash": "h", "task_id": task_id,
            "trial": 0, "seed": 7, "reward": 1.0, "feedback": "fine", "attempts": 1,
            "tokens": 10, "cost_usd": 0.5, "started_at": T0, "finished_at": T0, **values}


class _Weird:
    def __repr__(self) -> str:
        return "<weird>"


BAD = [  # (column, value, words the error must contain)
    ("reward", 1.5, "outside [0, 1]"), ("reward", -0.1, "negative"),
    ("reward", "high", "str, not a number"), ("reward", math.nan, "not a finite number"),
    ("reward", True, "bool"), ("cost_usd", -150.0, "negative"),
    ("cost_usd", math.nan, "not a finite number"), ("cost_usd", math.inf, "not a finite"),
    ("cost_usd", "a lot", "not a number"), ("tokens", -10, "negative"),
    ("tokens", "many", "not an integer"), ("tokens", 2.5, "not an integer"),
    ("tokens", 2**70, "outside"), ("latency_s", -1.0, "negative"),
    ("output", "bad\udc80bytes", "lone surrogate"), ("feedback", "x\udcff", "lone surrogate"),
    ("trace", ["not", "text"], "list, not text"), ("output", _Weird(), "<weird>"),
    ("score_parts", '{"a": NaN}', "part 'a'"), ("score_parts", "[1]", "not an object"),
    ("score_parts", "{bad", "not JSON"), ("started_at", "2024-01-01", "not a datetime"),
    ("finished_at", dt.datetime(2024, 1, 1), "no time zone"),
    ("worker_id", 17, "int, not text"), ("attempts", -1, "negative"),
    ("attempts", "1", "not an integer"),
]


@pytest.mark.parametrize(("column", "value", "words"), BAD,
                         ids=[f"{c}-{i}" for i, (c, _, _) in enumerate(BAD)])
def test_a_bad_value_is_an_error_row_naming_its_column(column, value, words):
    row = storable_row(_row(**{column: value}))
    assert row["error_kind"] == ErrorKind.INVALID_VALUE and row["reward"] is None
    assert f"invalid value in column {column!r}" in row["error"] and words in row["error"]
    assert row[column] is None or column == "attempts"
    kept = {"feedback": "fine", "tokens": 10, "cost_usd": 0.5}
    assert {k: row[k] for k in kept if k != column} == {k: v for k, v in kept.items()
                                                       if k != column}
    rows_to_table([row])  # always storable afterwards


def test_a_good_row_passes_unchanged_and_checking_is_idempotent():
    good = storable_row(_row())
    assert set(good) == set(COLUMNS) and good["error"] is None and good["reward"] == 1.0
    assert storable_row(good) == good
    bad = storable_row(_row(cost_usd=-1.0))
    assert storable_row(bad) == bad


def test_an_error_row_never_has_a_reward_and_its_error_text_is_kept_encodable():
    row = storable_row(_row(reward=0.7, error="upstream said \udc80", error_kind="adapter"))
    assert row["reward"] is None and row["error_kind"] == ErrorKind.ADAPTER
    assert row["error"] == "upstream said \\udc80"
    both = storable_row(_row(error="503", error_kind="adapter", cost_usd=math.nan))
    assert both["error_kind"] == ErrorKind.INVALID_VALUE
    assert "unit's own error: 503" in both["error"]


@pytest.mark.parametrize(("values", "words"), [
    ({"error": "503", "error_kind": None}, "'error_kind': None is not an error kind"),
    ({"error": "503", "error_kind": "fatal"}, "'fatal' is not an error kind"),
    ({"error_kind": "crash"}, "without an error"),
    ({"reward": None}, "'reward': missing, and the row has no error"),
])
def test_inconsistent_error_columns_are_invalid(values, words):
    row = storable_row(_row(**values))
    assert row["error_kind"] == ErrorKind.INVALID_VALUE and words in row["error"]


@pytest.mark.parametrize(("column", "value"), [
    ("task_id", "t\udc80"), ("task_id", ""), ("run_id", None), ("trial", -1),
    ("trial", "0"), ("seed", 2**64), ("schema_version", 0),
])
def test_a_bad_key_column_raises_naming_it(column, value):
    with pytest.raises(RecordError, match=f"key column '{column}'"):
        storable_row(_row(**{column: value}))


def test_one_bad_row_never_loses_the_part(tmp_path):
    """A part written from 150 rows with one lone surrogate, one string reward and one
    negative cost among them holds all 150 rows (it used to fail as a whole)."""
    rows = [_row(f"t{i:03d}") for i in range(150)]
    rows[3] = _row("t003", output="bad\udc80bytes")
    rows[70] = _row("t070", reward="high")
    rows[149] = _row("t149", cost_usd=-150.0)
    path = write_part(rows, tmp_path / "part.parquet")
    table = pq.read_table(path)
    assert table.num_rows == 150
    kinds = dict(zip(table["task_id"].to_pylist(), table["error_kind"].to_pylist(), strict=True))
    assert {t for t, k in kinds.items() if k is not None} == {"t003", "t070", "t149"}
    assert sum(c for c in table["cost_usd"].to_pylist() if c is not None) == 149 * 0.5
