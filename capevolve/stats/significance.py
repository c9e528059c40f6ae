"""Comparisons of a candidate against a reference, and how to read them.

Every comparison reports ``delta`` = candidate minus reference, its standard
error, a t statistic and a two-sided p-value, plus a ``Confidence`` label:

* NEGLIGIBLE: |delta| < min_delta, whatever the noise;
* SIGNIFICANT: |delta| >= min_delta and |t| >= 2, or the SE is exactly 0;
* WITHIN_NOISE: |delta| >= min_delta but |t| < 2 (or the SE is unknown).

A zero SE means every paired difference (or every value on each side) is the
same: the move is *exact*. Then ``t`` and ``df`` are None and the p-value is
0.0 if delta != 0, else 1.0.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from scipy.stats import norm
from scipy.stats import t as student_t

from capevolve.kinds import Confidence

_MIN_DELTA_TOLERANCE = 1e-12
_CONSTANT_TOLERANCE = 1e-12
_RATE_TOLERANCE = 1e-9
_T_THRESHOLD = 2.0
_T_TOLERANCE = 1e-12


def _json_number(value: float | None) -> float | None:
    """Return ``value`` as a float, or None when it is None, inf or nan."""
    if value is None or not math.isfinite(value):
        return None
    return float(value)


@dataclass(frozen=True)
class Comparison:
    """The result of comparing a candidate against a reference.

    ``n`` is the number of tasks compared (for Welch, both sides together; 0
    for a comparison of summary numbers). ``exact`` is True when ``se == 0``.
    """

    delta: float
    se: float | None
    t: float | None
    df: float | None
    p_value: float | None
    n: int
    exact: bool
    confidence: Confidence

    def to_dict(self) -> dict[str, object]:
        """Return a JSON-safe dict: inf and nan become None, confidence its string."""
        return {
            "delta": _json_number(self.delta),
            "se": _json_number(self.se),
            "t": _json_number(self.t),
            "df": _json_number(self.df),
            "p_value": _json_number(self.p_value),
            "n": int(self.n),
            "exact": bool(self.exact),
            "confidence": self.confidence.value,
        }


def confidence_label(delta: float, se: float | None, min_delta: float) -> Confidence:
    """Label a difference (see the module docstring for the rules).

    |delta| is compared with ``min_delta`` with a 1e-12 tolerance so that, for
    example, 0.12 - 0.10 counts as reaching a min_delta of 0.02; |delta|/se is
    compared with 2 with the same tolerance, so (0.6 - 0.5)/0.05 counts as t = 2.
    """
    if abs(delta) < min_delta - _MIN_DELTA_TOLERANCE:
        return Confidence.NEGLIGIBLE
    if se == 0.0:
        return Confidence.SIGNIFICANT
    if se is None:
        return Confidence.WITHIN_NOISE
    if abs(delta) / se >= _T_THRESHOLD - _T_TOLERANCE:
        return Confidence.SIGNIFICANT
    return Confidence.WITHIN_NOISE


def _build(
    delta: float, se: float | None, df: float | None, n: int, min_delta: float
) -> Comparison:
    """Assemble a Comparison, applying the exact rule when ``se == 0``.

    The p-value is two-sided, from Student t with ``df`` when df is known and
    from the standard normal when df is None.
    """
    label = confidence_label(delta, se, min_delta)
    if se is None:
        return Comparison(delta, None, None, df, None, n, False, label)
    if se == 0.0:
        p_value = 0.0 if delta != 0.0 else 1.0
        return Comparison(delta, 0.0, None, None, p_value, n, True, label)
    t = delta / se
    tail = norm.sf(abs(t)) if df is None else student_t.sf(abs(t), df)
    return Comparison(delta, se, t, df, float(2.0 * tail), n, False, label)


def _mean(values: Sequence[float]) -> float:
    """Return the arithmetic mean of a non-empty sequence."""
    return math.fsum(values) / len(values)


def _variance(values: Sequence[float]) -> float:
    """Return the sample variance (ddof=1); exactly 0.0 for a constant sequence.

    Values within a 1e-12 relative spread count as constant, so float noise in
    differences such as 0.7 - 0.5 versus 0.9 - 0.7 does not give a huge t.
    """
    low, high = min(values), max(values)
    if high - low <= _CONSTANT_TOLERANCE * max(1.0, abs(low), abs(high)):
        return 0.0
    mean = _mean(values)
    return math.fsum((x - mean) ** 2 for x in values) / (len(values) - 1)


def paired_comparison(
    candidate: Mapping[str, float], reference: Mapping[str, float], min_delta: float = 0.0
) -> Comparison:
    """Paired t-test over the task ids present in both mappings (task means).

    d_i = candidate_i - reference_i, delta = mean(d), se = sd(d, ddof=1)/sqrt(n),
    t = delta / se, df = n - 1; matches ``scipy.stats.ttest_rel`` when se > 0.
    Coverage (tasks on one side only) is the caller's concern; they are ignored.
    Raises ValueError when fewer than 2 tasks are common to both.
    """
    common = sorted(set(candidate) & set(reference))
    if len(common) < 2:
        raise ValueError(f"paired comparison needs >= 2 common tasks, got {len(common)}")
    diffs = [candidate[task] - reference[task] for task in common]
    n = len(diffs)
    se = math.sqrt(_variance(diffs) / n)
    return _build(_mean(diffs), se, float(n - 1), n, min_delta)


def welch_comparison(
    candidate: Sequence[float], reference: Sequence[float], min_delta: float = 0.0
) -> Comparison:
    """Unpaired Welch t-test of two samples of task means.

    se = sqrt(s1^2/n1 + s2^2/n2) and df is Welch-Satterthwaite:
    (v1 + v2)^2 / (v1^2/(n1 - 1) + v2^2/(n2 - 1)) with v = s^2/n; matches
    ``scipy.stats.ttest_ind(equal_var=False)`` when se > 0. ``n`` is n1 + n2.
    Raises ValueError when either side has fewer than 2 values.
    """
    n1, n2 = len(candidate), len(reference)
    if n1 < 2 or n2 < 2:
        raise ValueError(f"Welch comparison needs >= 2 values per side, got {n1} and {n2}")
    v1 = _variance(candidate) / n1
    v2 = _variance(reference) / n2
    se = math.sqrt(v1 + v2)
    df = None if se == 0.0 else (v1 + v2) ** 2 / (v1**2 / (n1 - 1) + v2**2 / (n2 - 1))
    return _build(_mean(candidate) - _mean(reference), se, df, n1 + n2, min_delta)


def summary_comparison(
    candidate_mean: float,
    candidate_se: float | None,
    reference_mean: float,
    reference_se: float | None,
    min_delta: float = 0.0,
) -> Comparison:
    """Compare two independent summaries (mean and SE computed elsewhere).

    se = sqrt(a^2 + b^2), t = delta / se, df None (p-value from the normal),
    n = 0. When either SE is None the combined SE, t and p-value are None.
    """
    se = (
        None
        if candidate_se is None or reference_se is None
        else math.hypot(candidate_se, reference_se)
    )
    return _build(candidate_mean - reference_mean, se, None, 0, min_delta)


def paired_regressions(candidate: Mapping[str, float], reference: Mapping[str, float]) -> list[str]:
    """Return sorted task ids the reference always passed and the candidate never did.

    Both mappings hold per-task *pass rates*: the fraction of valid trials that
    passed (whether a trial passed is judged by the caller).
    An id is a regression when reference rate >= 1 - 1e-9 and candidate rate
    <= 1e-9. Only ids present in both mappings are considered.
    """
    return sorted(
        task
        for task in set(candidate) & set(reference)
        if reference[task] >= 1.0 - _RATE_TOLERANCE and candidate[task] <= _RATE_TOLERANCE
    )
