"""Arrow columns to and from numpy through their buffers, without pyarrow's pandas import."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

_NUMERIC = {pa.int8(): np.int8, pa.int16(): np.int16, pa.int32(): np.int32,
            pa.int64(): np.int64, pa.uint8(): np.uint8, pa.uint16(): np.uint16,
            pa.uint32(): np.uint32, pa.uint64(): np.uint64, pa.float32(): np.float32,
            pa.float64(): np.float64}


def _one(array: pa.Array | pa.ChunkedArray) -> pa.Array:
    return array.combine_chunks() if isinstance(array, pa.ChunkedArray) else array


def _bits(buffer: pa.Buffer | None, offset: int, n: int) -> np.ndarray | None:
    """``n`` bits from ``offset`` of an Arrow bitmap, as bools."""
    if buffer is None:
        return None
    packed = np.frombuffer(buffer, dtype=np.uint8)
    return np.unpackbits(packed, bitorder="little")[offset:offset + n].view(bool)


def valid(array: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """True where ``array`` is not null."""
    one = _one(array)
    mask = _bits(one.buffers()[0], one.offset, len(one)) if one.null_count else None
    return np.ones(len(one), dtype=bool) if mask is None else mask.copy()


def values(array: pa.Array | pa.ChunkedArray, fill: float | bool | None = None) -> np.ndarray:
    """A fixed-width ``array`` as numpy, nulls as ``fill`` (ValueError without one)."""
    one = _one(array)
    n, kind = len(one), one.type
    if pa.types.is_boolean(kind):
        data = _bits(one.buffers()[1], one.offset, n)
        out = np.zeros(0, dtype=bool) if data is None else data
    elif kind in _NUMERIC:
        dtype = np.dtype(_NUMERIC[kind])
        buffer = one.buffers()[1]
        out = (np.zeros(0, dtype=dtype) if buffer is None or n == 0 else
               np.frombuffer(buffer, dtype=dtype, count=n, offset=one.offset * dtype.itemsize))
    else:
        raise TypeError(f"not a fixed-width numeric or boolean column: {kind}")
    if not one.null_count:
        return out
    if fill is None:
        raise ValueError(f"the column has {one.null_count} null(s) and no fill value")
    out = out.copy()
    out[~valid(one)] = fill
    return out


def int64_array(data: np.ndarray) -> pa.Array:
    """``data`` as an Arrow int64 array."""
    flat = np.ascontiguousarray(data, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), len(flat), [None, pa.py_buffer(flat)])


def float64_array(data: np.ndarray) -> pa.Array:
    """``data`` as an Arrow float64 array."""
    flat = np.ascontiguousarray(data, dtype=np.float64)
    return pa.Array.from_buffers(pa.float64(), len(flat), [None, pa.py_buffer(flat)])


def string_array(texts: Sequence[str]) -> pa.Array:
    """``texts`` as ``pa.array`` would make them; a lone surrogate raises UnicodeEncodeError."""
    joined = "".join(texts)
    blob = joined.encode("utf-8")
    del joined
    n = len(texts)
    kind, width = (pa.string(), np.int32) if len(blob) < 2**31 else \
        (pa.large_string(), np.int64)
    offsets = np.zeros(n + 1, dtype=width)
    if blob.isascii():  # a text's length in bytes is its length
        offsets[1:] = np.fromiter(map(len, texts), dtype=width, count=n)
    else:
        offsets[1:] = np.fromiter((len(t.encode("utf-8")) for t in texts), dtype=width,
                                  count=n)
    np.cumsum(offsets, out=offsets)
    return pa.Array.from_buffers(kind, n, [None, pa.py_buffer(offsets), pa.py_buffer(blob)])
