"""The deterministic evaluators: pure functions of (output, expected) -> (score, why)."""

from __future__ import annotations

import json
import math
import re
import string
from collections import Counter
from collections.abc import Callable
from typing import Any

from capevolve.config import EvaluatorConfig
from capevolve.kinds import EvaluatorKind

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation)

Verdict = tuple[float, str]


def normalize(value: Any) -> str:
    """Lower case, punctuation and articles removed, whitespace folded (SQuAD style)."""
    text = _ARTICLES.sub(" ", _text(value).lower().translate(_PUNCT))
    return " ".join(text.split())


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def exact(ev: EvaluatorConfig, output: Any, expected: Any) -> Verdict:
    """1 when output equals expected (strings compared without outer whitespace)."""
    same = (isinstance(output, str) and output.strip() == expected.strip()
            if isinstance(expected, str) else output == expected)
    return (1.0, "matches exactly") if same else (0.0, "differs from the expected output")


def normalized_exact(ev: EvaluatorConfig, output: Any, expected: Any) -> Verdict:
    """1 when both are equal after :func:`normalize`."""
    same = normalize(output) == normalize(expected)
    return (1.0, "matches after normalisation") if same else (
        0.0, "differs from the expected output after normalisation")


def token_f1(ev: EvaluatorConfig, output: Any, expected: Any) -> Verdict:
    """F1 of the normalised token bags (both empty: 1)."""
    got, want = normalize(output).split(), normalize(expected).split()
    if not got and not want:
        return 1.0, "both empty"
    common = sum((Counter(got) & Counter(want)).values())
    if common == 0:
        return 0.0, f"no token in common ({len(got)} output tokens)"
    precision, recall = common / len(got), common / len(want)
    f1 = 2 * precision * recall / (precision + recall)
    return f1, f"token precision {precision:.2f}, recall {recall:.2f}"


def _items(value: Any) -> set[str]:
    if isinstance(value, (list, tuple, set)):
        return {normalize(v) for v in value if normalize(v)}
    if isinstance(value, str):
        return {normalize(v) for v in re.split(r"[,;\n]", value) if normalize(v)}
    return {normalize(value)}


def set_overlap(ev: EvaluatorConfig, output: Any, expected: Any) -> Verdict:
    """Jaccard overlap of the item sets (lists, or strings split on , ; and newlines)."""
    got, want = _items(output), _items(expected)
    if not got and not want:
        return 1.0, "both empty"
    inter = len(got & want)
    return inter / len(got | want), (f"{inter} of {len(want)} expected items present, "
                                     f"{len(got - want)} extra")


def regex(ev: EvaluatorConfig, output: Any, expected: Any) -> Verdict:
    """1 when the pattern (the evaluator's, else the expected value) matches the output."""
    pattern = ev.pattern if ev.pattern is not None else str(expected)
    try:
        found = re.search(pattern, _text(output)) is not None
    except re.error as exc:
        raise ValueError(f"evaluator {ev.name!r}: the pattern does not compile: {exc}") from None
    return (1.0, "the pattern matches") if found else (0.0, "the pattern does not match")


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        number = float(value.strip() if isinstance(value, str) else value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def numeric(ev: EvaluatorConfig, output: Any, expected: Any) -> Verdict:
    """1 when |output - expected| <= tolerance; a non-number output scores 0."""
    want = _number(expected)
    if want is None:
        raise ValueError(f"evaluator {ev.name!r}: the expected value is not a number")
    got = _number(output)
    if got is None:
        return 0.0, "the output is not a number"
    off = abs(got - want)
    return (1.0, "within tolerance") if off <= ev.tolerance else (
        0.0, f"off by {off:g} (tolerance {ev.tolerance:g})")


def _walk(value: Any, path: str) -> Any:
    for key in path.split("."):
        if isinstance(value, dict) and key in value:
            value = value[key]
        elif isinstance(value, list) and key.isdigit() and int(key) < len(value):
            value = value[int(key)]
        else:
            raise KeyError(key)
    return value


def json_field(ev: EvaluatorConfig, output: Any, expected: Any) -> Verdict:
    """1 when ``field`` of the output (JSON-parsed when a string) equals ``field`` of the
    expected value (or the value itself when not an object)."""
    path = str(ev.field)
    try:
        want = _walk(expected, path) if isinstance(expected, dict) else expected
    except KeyError:
        raise ValueError(f"evaluator {ev.name!r}: the expected value has no field "
                         f"{path!r}") from None
    if isinstance(output, str):
        try:
            output = json.loads(output)
        except ValueError:
            return 0.0, "the output is not JSON"
    try:
        got = _walk(output, path)
    except KeyError:
        return 0.0, f"the output has no field {path!r}"
    return (1.0, f"field {path!r} matches") if got == want else (
        0.0, f"field {path!r} differs")


DETERMINISTIC: dict[EvaluatorKind, Callable[[EvaluatorConfig, Any, Any], Verdict]] = {
    EvaluatorKind.EXACT: exact, EvaluatorKind.NORMALIZED_EXACT: normalized_exact,
    EvaluatorKind.TOKEN_F1: token_f1, EvaluatorKind.SET_OVERLAP: set_overlap,
    EvaluatorKind.REGEX: regex, EvaluatorKind.NUMERIC: numeric,
    EvaluatorKind.JSON_FIELD: json_field,
}
"""The metric of each deterministic evaluator kind."""
