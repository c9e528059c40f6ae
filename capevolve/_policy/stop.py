"""The ``stop_condition`` (clauses joined by ``or``, ``,`` or ``;``) as predicates."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from capevolve.records import StopParse, StopPredicate

PLATEAU_WINDOW = 5
"""Gated iterations without an accept that make a plateau."""


class StopKind(StrEnum):
    """What a stop predicate measures."""

    VAL_MEAN = "val_mean"
    ITERATIONS = "iterations"
    METRIC_CALLS = "metric_calls"
    COST_USD = "cost_usd"
    WALL_S = "wall_s"
    STALL = "stall"


@dataclass(frozen=True)
class LoopState:
    """What a loop has reached."""

    best_val_mean: float | None
    iterations: int
    metric_calls: int
    cost_usd: float
    wall_s: float
    stall: int


_NUM = r"(\d+(?:\.\d+)?)"
_TIME_UNITS = {"s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1, "m": 60, "min": 60,
               "mins": 60, "minute": 60, "minutes": 60, "h": 3600, "hr": 3600, "hrs": 3600,
               "hour": 3600, "hours": 3600}
_CMP = r"\s*(?:>=|>|=|==|at least|of|reaches|reached|is)?\s*"
_PATTERNS: tuple[tuple[StopKind, str], ...] = (
    (StopKind.STALL, rf"^{_NUM}\s+(?:stalls?|stalled iterations|consecutive rejections?"
                     rf"|iterations? without (?:an? )?(?:improvement|accept))$"),
    (StopKind.STALL, rf"^(?:stall|stalls|stall count){_CMP}{_NUM}$"),
    (StopKind.VAL_MEAN, rf"^(?:val(?:idation)?\s*(?:mean|score|reward)?|mean|target)"
                        rf"{_CMP}{_NUM}$"),
    (StopKind.ITERATIONS, rf"^(?:max(?:imum)?\s+)?{_NUM}\s+(?:iterations?|iters?|steps?)$"),
    (StopKind.ITERATIONS, rf"^(?:max(?:imum)?\s+)?(?:iterations?|iters?){_CMP}{_NUM}$"),
    (StopKind.METRIC_CALLS, rf"^(?:max(?:imum)?\s+)?{_NUM}\s+(?:metric calls?|rollouts?)$"),
    (StopKind.METRIC_CALLS, rf"^(?:metric calls?|rollouts?){_CMP}{_NUM}$"),
    (StopKind.COST_USD, rf"^(?:(?:cost|spend|spent|budget){_CMP})?\${_NUM}(?:\s+spent)?$"),
    (StopKind.COST_USD, rf"^{_NUM}\s*(?:usd|dollars?)(?:\s+spent)?$"),
    (StopKind.COST_USD, rf"^(?:cost|spend|spent){_CMP}{_NUM}\s*(?:usd)?$"),
)
_TIME = re.compile(rf"^(?:(?:wall(?:\s*time)?|time|after){_CMP})?{_NUM}\s*([a-z]+)?"
                   rf"(?:\s+(?:of\s+)?wall(?:\s*time)?)?$")


_MEANS = {StopKind.VAL_MEAN: "val mean >= {v:g}", StopKind.ITERATIONS: "{v:g} iterations",
          StopKind.METRIC_CALLS: "{v:g} metric calls", StopKind.COST_USD: "${v:g} spent",
          StopKind.WALL_S: "{v:g} s wall time",
          StopKind.STALL: "{v:g} iterations without an accept"}


def _predicate(kind: StopKind, value: float, text: str) -> StopPredicate:
    """``measure >= value`` stops the loop."""
    return StopPredicate(kind=kind, value=value, clause=text.strip(),
                         means=_MEANS[kind].format(v=value))


def _clause(text: str) -> StopPredicate | None:
    clause = " ".join(text.lower().split())
    for kind, pattern in _PATTERNS:
        match = re.match(pattern, clause)
        if match:
            return _predicate(kind, float(match.group(1)), text)
    match = _TIME.match(clause)
    if match and (match.group(2) in _TIME_UNITS or (match.group(2) is None
                                                    and clause.startswith(("wall", "time")))):
        return _predicate(StopKind.WALL_S, float(match.group(1)) * _TIME_UNITS.get(
            match.group(2) or "s", 1), text)
    return None


def parse_stop(text: str | None) -> StopParse:
    """Parse ``text`` into predicates and unparsed clauses."""
    text = text or ""
    predicates, unparsed = [], []
    for part in re.split(r"\s+or\s+|[,;]", text, flags=re.IGNORECASE):
        if not part.strip():
            continue
        predicate = _clause(part)
        if predicate is None:
            unparsed.append(part.strip())
        else:
            predicates.append(predicate)
    return StopParse(text=text, predicates=predicates, unparsed=unparsed)


def first_met(plan: StopParse, state: LoopState) -> str | None:
    """The first predicate met, in words (None: go on)."""
    for p in plan.predicates:
        measured = {StopKind.VAL_MEAN: state.best_val_mean, StopKind.ITERATIONS: state.iterations,
                    StopKind.METRIC_CALLS: state.metric_calls,
                    StopKind.COST_USD: state.cost_usd, StopKind.WALL_S: state.wall_s,
                    StopKind.STALL: state.stall}[StopKind(p.kind)]
        if measured is not None and measured >= p.value - 1e-12:
            return f"stop condition met: {p.means} (reached {measured:g})"
    return None


def plateau(accepted: Sequence[bool], window: int) -> str | None:
    """Why the last ``window`` gated iterations are a plateau (None: too few, or one accepted)."""
    if window < 1 or len(accepted) < window or any(accepted[-window:]):
        return None
    return (f"plateau: none of the last {window} gated children beat the best beyond "
            f"the gate's noise threshold")
