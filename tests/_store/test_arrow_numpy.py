"""The store's buffer reads of Arrow columns give exactly pyarrow's own conversions, and
load no pandas."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from capevolve._store.rollouts.arrow_numpy import (
    float64_array,
    int64_array,
    string_array,
    valid,
    values,
)

TYPES = [pa.int8(), pa.int32(), pa.int64(), pa.uint16(), pa.float32(), pa.float64(),
         pa.bool_()]


def _column(kind: pa.DataType, n: int, nulls: bool, rng: np.random.Generator) -> pa.Array:
    if pa.types.is_boolean(kind):
        data = rng.random(n) < 0.5
    elif pa.types.is_floating(kind):
        data = rng.normal(size=n).astype(kind.to_pandas_dtype())
    else:
        data = rng.integers(0, 100, n).astype(kind.to_pandas_dtype())
    mask = rng.random(n) < 0.3 if nulls else None
    return pa.array(data, type=kind, mask=mask)


@pytest.mark.parametrize("kind", TYPES, ids=str)
@pytest.mark.parametrize("nulls", [False, True])
def test_values_and_valid_match_pyarrow_on_slices_and_chunks(kind: pa.DataType,
                                                              nulls: bool) -> None:
    """Every offset (slices that start inside a byte of a bitmap) and chunked arrays give
    pyarrow's values and validity; null slots hold the fill."""
    rng = np.random.default_rng(7)
    whole = _column(kind, 61, nulls, rng)
    fill = False if pa.types.is_boolean(kind) else 0 if pa.types.is_integer(kind) else np.nan
    cases = [whole, *(whole.slice(start, 29) for start in (1, 3, 8, 13)),
             pa.chunked_array([whole.slice(0, 5), whole.slice(5, 17), whole.slice(22)]),
             whole.slice(10, 0)]
    for array in cases:
        one = array.combine_chunks() if isinstance(array, pa.ChunkedArray) else array
        expected = pc.fill_null(one, fill).to_numpy(zero_copy_only=False)
        got = values(array, fill=fill)
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)
        np.testing.assert_array_equal(valid(array), pc.is_valid(one).to_numpy(
            zero_copy_only=False))


def test_nulls_without_a_fill_are_refused_and_other_types_too() -> None:
    """A null slot is never given a made-up value; a string column is no fixed-width one."""
    with pytest.raises(ValueError, match="1 null"):
        values(pa.array([1.0, None]))
    with pytest.raises(TypeError, match="string"):
        values(pa.array(["a"]))


def _loads_pandas(code: str) -> bool:
    """Whether running ``code`` in a fresh interpreter imports pandas."""
    pytest.importorskip("pandas")
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys\n"
                          "print('pandas' in sys.modules)\n"],
                         capture_output=True, text=True, check=True, timeout=120)
    return out.stdout.strip() != "False"


def test_reading_a_duckdb_result_loads_no_pandas() -> None:
    """What the gate and the summary do with a DuckDB result imports no pandas (when it is
    installed at all: pyarrow's ``to_numpy`` would)."""
    code = (
        "import sys, duckdb\n"
        "from capevolve._store.rollouts.arrow_numpy import int64_array, valid, values\n"
        "t = duckdb.sql(\"select i::int as i, (case when i % 4 = 0 then null else i end)"
        "::double as d, i % 3 = 0 as b from range(100) r(i)\").to_arrow_table()\n"
        "values(t.column('i')); values(t.column('d'), fill=float('nan'));"
        " values(t.column('b')); valid(t.column('d'))\n")
    assert not _loads_pandas(code)


def test_int64_array_is_what_pa_array_makes() -> None:
    """Take indices made from numpy (strided, other integer widths) equal pa.array's."""
    data = np.arange(40, dtype=np.int32)[::3]
    made = int64_array(data)
    assert made.equals(pa.array(data.astype(np.int64)))
    assert pa.array(["a", "b", "c"]).take(int64_array(np.array([2, 0]))).to_pylist() == [
        "c", "a"]


def test_float64_and_string_arrays_are_what_pa_array_makes() -> None:
    """Floats (strided, float32, -0.0, NaN, infinities) and texts (empty, non-ASCII,
    NUL, very long, none at all) give arrays equal to pa.array's, valid in full; a lone
    surrogate is refused as pa.array refuses it."""
    floats = np.array([0.5, -0.0, np.nan, np.inf, -np.inf, 1e-310, 3.0], np.float32)[::2]
    made = float64_array(floats)
    assert made.type == pa.float64() and made.null_count == 0
    assert np.array_equal(values(made), floats.astype(np.float64), equal_nan=True)
    for texts in ([], [""], ["a", "", "\u00e9t\u00e9", "\u65e5\u672c", "a\x00b", "z" * 5000],
                  [f"t{i:06d}" for i in range(1000)]):
        made = string_array(texts)
        made.validate(full=True)
        assert made.equals(pa.array(texts, pa.string())), texts[:3]
    with pytest.raises(UnicodeEncodeError):
        string_array(["ok", "\ud800"])
    with pytest.raises(UnicodeEncodeError):
        pa.array(["ok", "\ud800"], pa.string())


def test_the_means_file_and_the_summary_columns_load_no_pandas() -> None:
    """Encoding an evaluation's means file (what an evaluate's tail does) imports no pandas
    (``pa.array`` and ``pa.table`` of numpy would, 0.3 s, where it is installed)."""
    assert not _loads_pandas(
        "import numpy as np\n"
        "from capevolve._store.evals_means import encode\n"
        "from capevolve._store.rollouts.arrow_numpy import string_array\n"
        "encode(['a', 'b'], np.array([0.5, 1.0]), np.array([1, 2]))\n"
        "encode(string_array(['a']), np.array([0.5]), np.array([3]))\n")
