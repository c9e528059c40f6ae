"""Exactly rounded sums of many small groups at once: ``math.fsum``'s floats, vectorised (pure).

Every per-task statistic of the gate is a sum over a task's trials, and the gate has always
summed with ``math.fsum`` (the correctly rounded sum: the same float whatever the order).
:func:`group_fsum` returns, for every group ``values[offsets[i]:offsets[i + 1]]``, exactly
the float ``math.fsum`` returns for it, from whole-array operations:

1. each group is summed left to right with TwoSum (Knuth), which also yields the exact
   rounding error of every addition: the exact sum is ``s + sum(errors)``;
2. the errors are summed in floating point (``c``, again with TwoSum, so it is known
   whether ``c`` is their exact sum), with a bound ``B`` on how far ``c`` can be from it
   (``n * 2^-51 * sum |errors|``, four times the textbook ``gamma_(n-2)`` bound, plus a
   floor against underflow);
3. ``r = fl(s + c)``. When ``c`` is exact, the exact sum is ``s + c`` and ``r`` is its
   correctly rounded value by IEEE addition itself (round half to even, as fsum). Else,
   with ``t`` the TwoSum error of ``s + c``, the exact sum lies within ``|t| + B`` of
   ``r``; when that is strictly below half the smaller gap from ``r`` to its two
   neighbouring floats, the exact sum is strictly inside ``r``'s rounding interval and
   ``r`` is again the answer. The group gets ``r + 0.0`` (``math.fsum`` of an exact zero
   is +0.0).

A group that this cannot certify (its exact sum within the bound of a rounding boundary,
or a non-finite value) is summed by ``math.fsum`` itself, so the answer is always
``math.fsum``'s. An empty group sums to 0.0.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy loads with the first sum (``status`` never sums trials)
    import numpy as np


def _two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(fl(a + b), the exact error a + b - fl(a + b)), elementwise (Knuth's TwoSum)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def group_fsum(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """``[math.fsum(values[offsets[i]:offsets[i + 1]]) for i]`` as float64 (see the module
    docstring); ``offsets`` is non-decreasing, starting at 0 and ending at ``len(values)``."""
    import numpy as np

    values = np.asarray(values, dtype=np.float64)
    offsets = np.asarray(offsets, dtype=np.int64)
    starts, counts = offsets[:-1], np.diff(offsets)
    total = np.zeros(counts.size, dtype=np.float64)
    comp, bound = np.zeros_like(total), np.zeros_like(total)
    inexact = np.zeros(counts.size, dtype=bool)  # c itself was rounded
    scored = counts > 0
    total[scored] = values[starts[scored]]
    for j in range(1, int(counts.max(initial=0))):
        idx = np.flatnonzero(counts > j)
        total[idx], err = _two_sum(total[idx], values[starts[idx] + j])
        comp[idx], err2 = _two_sum(comp[idx], err)
        inexact[idx] |= err2 != 0
        bound[idx] += np.abs(err)
    rounded, tail = _two_sum(total, comp)
    with np.errstate(invalid="ignore", over="ignore"):
        margin = bound * (counts * 2.0**-51) + np.where(bound > 0, 2.0**-1060, 0.0)
        gap = np.minimum(np.abs(np.spacing(rounded)),  # to the neighbours of r
                         np.abs(rounded - np.nextafter(rounded, 0.0)))
        certified = (np.isfinite(rounded) & ~inexact) | (np.abs(tail) + margin < gap / 2)
    out = rounded + 0.0
    for i in np.flatnonzero(scored & ~certified).tolist():
        out[i] = math.fsum(values[offsets[i]:offsets[i + 1]].tolist())
    out[~scored] = 0.0
    return out
