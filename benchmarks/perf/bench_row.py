"""The bench row protocol: one figure per line, ``BENCH_ROW {json}``, printed by every
benchmark script and collected by ``table.py`` (``make bench``).

A row is a JSON object on one line after the literal prefix ``BENCH_ROW ``, with exactly
these keys: ``figure`` (non-empty text naming what is measured), ``value`` (a finite number
the script computed), ``unit``, ``target`` (text such as ``"<= 1.15"``, ``""`` for none),
``met`` (true / false, or null when there is no target), ``reference`` (the reference
line's figure, as text) and ``note`` (load average, N, ...).

:func:`emit` prints a row (``met`` is worked out from a comparison target when not given);
:func:`parse_line` reads one. A line with the prefix that is not a valid row parses to an
error row naming what is wrong, never an exception; a line without the prefix is ``None``.
When the target is a plain comparison (``<= x``, ``>= x``, ``< x``, ``> x``, ``== x``), a
row whose ``met`` disagrees with its value is an error row too.
"""

from __future__ import annotations

import json
import math
import operator
import os
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

PREFIX = "BENCH_ROW "
_OPS = {"<=": operator.le, ">=": operator.ge, "<": operator.lt, ">": operator.gt,
        "==": operator.eq}
_TARGET = re.compile(r"^\s*(<=|>=|==|<|>)\s*(-?[0-9][0-9_,]*(?:\.[0-9]+)?(?:e-?[0-9]+)?)")


class BenchRow(BaseModel):
    """One figure as a script printed it (the protocol's keys, strictly typed)."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    figure: str = Field(min_length=1)
    """What is measured, e.g. ``"evaluate wall / ideal (20,000 x 100 ms)"``."""
    value: float | int
    """The measured number (finite)."""
    unit: str
    target: str
    """The target as text (``"<= 1.15"``), or ``""`` when the figure has none."""
    met: bool | None
    """Whether the target is met; None when there is no target."""
    reference: str
    """The reference line's figure (plain asyncio, one node, ...), as text."""
    note: str


class CollectedRow(BaseModel):
    """A row of the collector's table: a script's row, or one the collector made about a
    script (``error`` names what went wrong: missing, crashed, timed out, malformed)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    script: str
    figure: str
    value: float | None = None
    unit: str = ""
    target: str = ""
    met: bool | None = None
    reference: str = ""
    note: str = ""
    error: str | None = None


def target_verdict(target: str, value: float) -> bool | None:
    """``value`` against a comparison target (``"<= 1.15"``, ``">= 25,000 /s"``); None when
    the target is not a plain comparison."""
    match = _TARGET.match(target)
    if not match:
        return None
    bound = float(match.group(2).replace(",", "").replace("_", ""))
    return bool(_OPS[match.group(1)](value, bound))


def format_row(figure: str, value: float, unit: str, target: str = "",
               met: bool | None = None, reference: str = "", note: str = "") -> str:
    """The ``BENCH_ROW`` line of one figure; ``met`` defaults to the target's verdict."""
    if met is None and target:
        met = target_verdict(target, value)
    row = BenchRow(figure=figure, value=value, unit=unit, target=target, met=met,
                   reference=reference, note=note)
    return PREFIX + json.dumps(row.model_dump(), allow_nan=False)


def emit(figure: str, value: float, unit: str, target: str = "", met: bool | None = None,
         reference: str = "", note: str = "") -> None:
    """Print one figure's ``BENCH_ROW`` line (flushed, so a later crash cannot lose it)."""
    print(format_row(figure, value, unit, target, met, reference, note), flush=True)


def load_note() -> str:
    """The machine's load average and cores, for a row's note."""
    one, five, _ = os.getloadavg()
    return f"load {one:.1f}/{five:.1f} on {os.cpu_count()} cores"


def _error(script: str, reason: str, line: str) -> CollectedRow:
    shown = line if len(line) <= 160 else line[:157] + "..."
    return CollectedRow(script=script, figure=f"{script}: malformed BENCH_ROW", met=False,
                        error=reason, note=shown)


def parse_line(script: str, line: str) -> CollectedRow | None:
    """The row on ``line`` (printed by ``script``), an error row when it is malformed, or
    None when the line is not a ``BENCH_ROW`` line."""
    if not line.startswith(PREFIX):
        return None
    try:
        data: Any = json.loads(line[len(PREFIX):], parse_constant=_refuse_constant)
    except ValueError as exc:
        return _error(script, f"not JSON: {exc}", line)
    if not isinstance(data, dict):
        return _error(script, f"not a JSON object but {type(data).__name__}", line)
    try:
        row = BenchRow.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "row"
        return _error(script, f"field {where}: {first['msg']}", line)
    if not math.isfinite(row.value):
        return _error(script, f"field value: not finite ({row.value})", line)
    verdict = target_verdict(row.target, row.value)
    if verdict is not None and row.met is not verdict:
        return _error(script, f"met is {row.met} but {row.value} {row.target} is {verdict}",
                      line)
    return CollectedRow(script=script, **row.model_dump())


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number")
