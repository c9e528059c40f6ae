"""The check "nothing in the reliability matrix gets worse": this run's reliability rows
against ``reliability_baseline.json``.

The baseline file (written by ``reliability.py --write-baseline``) holds, per figure, the
value measured then and which way is better::

    {"commit": "...", "date": "...", "load": [...], "cpus": 2,
     "figures": {"<figure>": {"value": 0, "better": "lower"}, ...}}

:func:`regressions` returns one failed row per figure that is worse than its baseline or
absent from this run (a row that disappeared cannot be shown not to be worse), plus one
summary row with the count compared. A malformed baseline file is one error row naming the
file and the field, never an exception.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Literal

from bench_row import CollectedRow
from pydantic import BaseModel, ConfigDict, ValidationError

SCRIPT = "reliability"


class BaselineFigure(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    value: float | int
    better: Literal["lower", "higher"]


class Baseline(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    commit: str
    date: str
    load: list[float]
    cpus: int
    figures: dict[str, BaselineFigure]


def load(path: Path) -> Baseline | CollectedRow:
    """The baseline at ``path``, or an error row saying why it cannot be read."""
    try:
        return Baseline.model_validate(json.loads(path.read_text()))
    except (OSError, ValueError) as exc:
        if isinstance(exc, ValidationError):
            first = exc.errors()[0]
            reason = f"field {'.'.join(str(p) for p in first['loc'])}: {first['msg']}"
        else:
            reason = str(exc).splitlines()[0]
        return CollectedRow(script=SCRIPT, figure="reliability baseline unreadable",
                            met=False, error=f"{path}: {reason}")


def worse(value: float, base: BaselineFigure) -> bool:
    if not math.isfinite(value):
        return True
    return value > base.value if base.better == "lower" else value < base.value


def regressions(rows: list[CollectedRow], path: Path) -> list[CollectedRow]:
    """One failed row per reliability figure worse than (or missing against) the baseline,
    then a summary row."""
    baseline = load(path)
    if isinstance(baseline, CollectedRow):
        return [baseline]
    current = {r.figure: r for r in rows if r.script == SCRIPT and r.error is None}
    out = []
    for figure, base in sorted(baseline.figures.items()):
        row = current.get(figure)
        if row is None or row.value is None:
            out.append(CollectedRow(script=SCRIPT, figure=f"regression: {figure}", met=False,
                                    target=f"baseline {base.value:g}", error="not measured",
                                    note=f"no such row in this run (baseline {baseline.date})"))
        elif worse(row.value, base):
            out.append(CollectedRow(script=SCRIPT, figure=f"regression: {figure}",
                                    value=row.value, unit=row.unit, met=False,
                                    target=f"{'<=' if base.better == 'lower' else '>='} "
                                           f"{base.value:g}",
                                    reference=f"baseline {base.value:g} ({baseline.commit})",
                                    error="worse than the baseline"))
    n = len(baseline.figures)
    out.append(CollectedRow(script=SCRIPT, figure="reliability figures worse than the baseline",
                            value=len(out), unit="figures", target="== 0", met=not out,
                            reference=f"{n} figures of {baseline.commit} ({baseline.date})",
                            note=f"compared {n - sum(r.error == 'not measured' for r in out)}"
                                 f" of {n}"))
    return out
