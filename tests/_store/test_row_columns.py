"""The columnar storage boundary (capevolve._store.rollouts.columns): a scorer's column
batch is stored exactly as storable_row would store its rows, a bad value in any column is
still an invalid_value error row naming that column, and no other row of the batch is lost."""

import datetime as dt
import math

import pyarrow as pa
import pytest

from capevolve._store.rollouts import columns as columnar
from capevolve._store.rollouts.columns import column_rows, columns_to_table
from capevolve._store.rollouts.schema import SCHEMA_VERSION, rows_to_table
from capevolve.errors import RecordError
from capevolve.kinds import ErrorKind

T0 = 1_700_000_000.25
KEYS = {"schema_version": SCHEMA_VERSION, "run_id": "r", "eval_id": "val__seed__k1",
        "split": "val", "candidate_id": "seed", "candidate_hash": "h"}


def _batch(n: int = 5, **columns) -> dict:
    base = {"task_id": [f"t{i}" for i in range(n)], "trial": [0] * n,
            "seed": list(range(n)), "reward": [1.0] * n, "feedback": ["fine"] * n,
            "score_parts": [None] * n, "output": ["out"] * n, "inputs": ['"in"'] * n,
            "tool_calls": ["[]"] * n, "trace": [None] * n, "trajectory": [None] * n,
            "error": [None] * n, "error_kind": [None] * n, "attempts": [1] * n,
            "latency_s": [0.5] * n, "tokens": [10] * n, "cost_usd": [0.5] * n,
            "worker_id": ["w"] * n, "node_id": ["n"] * n, "started_at": [T0] * n,
            "finished_at": [T0 + 1] * n}
    return {**KEYS, **base, **columns}


def _with(column: str, value, at: int = 2, n: int = 5) -> dict:
    batch = _batch(n)
    values = list(batch[column])
    values[at] = value
    batch[column] = values
    return batch


class _Weird:
    def __repr__(self) -> str:
        return "<weird>"


BAD = [  # (column, value, words the error must contain): every kind of bad value
    ("reward", 1.5, "outside [0, 1]"), ("reward", -0.1, "negative"),
    ("reward", "high", "str, not a number"), ("reward", math.nan, "not a finite number"),
    ("reward", True, "bool"), ("cost_usd", -150.0, "negative"),
    ("cost_usd", math.nan, "not a finite number"), ("cost_usd", math.inf, "not a finite"),
    ("cost_usd", "a lot", "not a number"), ("cost_usd", True, "bool"),
    ("tokens", -10, "negative"), ("tokens", "many", "not an integer"),
    ("tokens", 2.5, "not an integer"), ("tokens", 2**70, "outside"),
    ("tokens", False, "bool"), ("latency_s", -1.0, "negative"),
    ("output", "bad\udc80bytes", "lone surrogate"), ("feedback", "x\udcff", "lone surrogate"),
    ("trace", ["not", "text"], "list, not text"), ("output", _Weird(), "<weird>"),
    ("score_parts", '{"a": NaN}', "part 'a'"), ("score_parts", "[1]", "not an object"),
    ("score_parts", "{bad", "not JSON"), ("started_at", "2024-01-01", "not a datetime"),
    ("finished_at", math.inf, "not a datetime"), ("worker_id", 17, "int, not text"),
    ("attempts", -1, "negative"), ("attempts", "1", "not an integer"),
    ("attempts", True, "bool"),
]


@pytest.mark.parametrize(("column", "value", "words"), BAD,
                         ids=[f"{c}-{i}" for i, (c, _, _) in enumerate(BAD)])
def test_a_bad_value_in_a_column_is_an_error_row_naming_it(column, value, words):
    """One bad value among five rows: that row is invalid_value naming the column (reward
    null), the four others are stored as they came, and the result is what storable_row
    makes of the same rows."""
    batch = _with(column, value)
    table = columns_to_table(batch, 5)
    assert table.equals(rows_to_table(column_rows(batch, 5)))
    rows = table.to_pylist()
    bad = rows[2]
    assert bad["error_kind"] == ErrorKind.INVALID_VALUE and bad["reward"] is None
    assert f"invalid value in column {column!r}" in bad["error"] and words in bad["error"]
    for i in (0, 1, 3, 4):
        assert rows[i]["reward"] == 1.0 and rows[i]["error"] is None
        assert rows[i]["tokens"] == 10 and rows[i]["cost_usd"] == 0.5


def test_a_good_batch_is_stored_as_storable_row_would_and_without_it(monkeypatch):
    """A batch of good rows takes the column-wise path only (storable_row never runs) and
    gives the very table the row path gives, timestamps included."""
    batch = _batch(50, score_parts=['{"m": 0.5}'] * 50,
                   error=["503"] + [None] * 49, error_kind=["adapter"] + [None] * 49,
                   reward=[None] + [0.5] * 49, feedback=[None] + ["f"] * 49,
                   trace=['{"é": "ü"}'] * 50, tokens=[None] * 25 + [3] * 25)
    batch["score_parts"][0] = None
    expected = rows_to_table(column_rows(batch, 50))
    calls = []
    monkeypatch.setattr(columnar, "rows_to_table", lambda rows: calls.append(rows))
    table = columns_to_table(batch, 50)
    assert calls == [] and table.equals(expected)
    assert table["started_at"][0].as_py() == dt.datetime.fromtimestamp(T0, dt.UTC)


@pytest.mark.parametrize(("values", "words"), [
    ({"error": "503", "error_kind": None}, "'error_kind': None is not an error kind"),
    ({"error": "503", "error_kind": "fatal"}, "'fatal' is not an error kind"),
    ({"error_kind": "crash"}, "without an error"),
    ({"reward": None}, "'reward': missing, and the row has no error"),
    ({"error": "503", "error_kind": "adapter", "reward": 0.7}, None),
])
def test_inconsistent_error_columns_are_invalid(values, words):
    """The error columns are checked together: a kind without an error, an unknown kind, a
    row with neither reward nor error; an error row never keeps a reward."""
    batch = _batch(3)
    for column, value in values.items():
        batch[column] = [batch[column][0], value, batch[column][2]]
    row = columns_to_table(batch, 3).to_pylist()[1]
    assert row["reward"] is None
    if words is None:
        assert row["error_kind"] == ErrorKind.ADAPTER
    else:
        assert row["error_kind"] == ErrorKind.INVALID_VALUE and words in row["error"]


@pytest.mark.parametrize(("column", "value"), [
    ("task_id", "t\udc80"), ("task_id", ""), ("run_id", None), ("trial", -1),
    ("trial", "0"), ("seed", 2**64), ("schema_version", 0), ("split", ""),
])
def test_a_bad_key_column_raises_naming_it(column, value):
    """Key columns come from capevolve itself: a bad one (shared or per row) raises."""
    batch = _batch(3)
    if isinstance(batch[column], list):
        batch[column] = [batch[column][0], value, batch[column][2]]
    else:
        batch[column] = value
    with pytest.raises(RecordError, match=f"key column '{column}'"):
        columns_to_table(batch, 3)


def test_a_column_of_the_wrong_length_is_checked_row_by_row():
    """A column shorter than the batch never shifts values between rows: the batch is
    refused by the row path (a missing key) instead of being stored misaligned."""
    batch = _batch(4)
    batch["reward"] = [1.0, 0.0, 1.0]
    with pytest.raises(IndexError):
        columns_to_table(batch, 4)


def test_the_schema_of_the_table_is_the_rollout_schema():
    """Whatever path a batch takes, the table has the canonical schema."""
    from capevolve._store.rollouts.schema import ROLLOUT_SCHEMA

    for batch in (_batch(3), _with("reward", "x", n=3, at=0)):
        table = columns_to_table(batch, 3)
        assert table.schema.equals(ROLLOUT_SCHEMA) and isinstance(table, pa.Table)
