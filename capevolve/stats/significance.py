"""Comparisons of a candidate against a reference: delta, SE, t, df and a two-sided p."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from capevolve.stats.estimators import clustered_se, n_clusters
from capevolve.stats.power import t_tail


def _json_number(value: float | None) -> float | None:
    if value is None or not math.isfinite(value):
        return None
    return float(value)


@dataclass(frozen=True)
class Comparison:
    """A candidate compared against a reference."""

    delta: float
    se: float | None
    t: float | None
    df: float | None
    p_value: float | None
    n: int
    n_clusters: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict (inf and nan become None)."""
        numbers = {k: _json_number(getattr(self, k)) for k in ("delta", "se", "t", "df", "p_value")}
        return numbers | {"n": int(self.n), "n_clusters": self.n_clusters}


def _build(delta: float, se: float | None, df: float | None, n: int,
           clusters: int | None = None) -> Comparison:
    """A Comparison; t and p only when se is positive and finite."""
    if se is None or se == 0.0 or not math.isfinite(se):
        return Comparison(delta, se, None, df, None, n, clusters)
    t = delta / se
    return Comparison(delta, se, t, df, 2.0 * t_tail(abs(t), df), n, clusters)


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)


def _variance(values: Sequence[float]) -> float:
    """Sample variance (ddof=1)."""
    shifted = [x - values[0] for x in values]
    mean = _mean(shifted)
    return math.fsum((x - mean) ** 2 for x in shifted) / (len(values) - 1)


def paired_comparison(candidate: Mapping[str, float], reference: Mapping[str, float],
                      clusters: Mapping[str, str] | None = None) -> Comparison:
    """Paired t-test over shared tasks (CR1 SE, df = clusters - 1, if clustered)."""
    common = sorted(set(candidate) & set(reference))
    if len(common) < 2:
        raise ValueError(f"paired comparison needs >= 2 common tasks, got {len(common)}")
    diffs = {task: candidate[task] - reference[task] for task in common}
    n = len(diffs)
    delta = _mean(list(diffs.values()))
    groups = n_clusters(common, clusters) if clusters else n  # no key: a cluster per task
    if clusters and groups < n:
        se = clustered_se(diffs, clusters)
        return _build(delta, se, float(groups - 1) if groups > 1 else None, n, groups)
    se = math.sqrt(_variance(list(diffs.values())) / n)
    return _build(delta, se, float(n - 1), n)


def welch_comparison(candidate: Sequence[float], reference: Sequence[float]) -> Comparison:
    """Unpaired Welch t-test of two samples of task means."""
    n1, n2 = len(candidate), len(reference)
    if n1 < 2 or n2 < 2:
        raise ValueError(f"Welch comparison needs >= 2 values per side, got {n1} and {n2}")
    v1 = _variance(candidate) / n1
    v2 = _variance(reference) / n2
    se = math.sqrt(v1 + v2)
    df = None if se == 0.0 else (v1 + v2) ** 2 / (v1**2 / (n1 - 1) + v2**2 / (n2 - 1))
    return _build(_mean(candidate) - _mean(reference), se, df, n1 + n2)


def summary_comparison(candidate_mean: float, candidate_se: float | None,
                       reference_mean: float, reference_se: float | None) -> Comparison:
    """Compare two independent (mean, SE) summaries (df None: the normal)."""
    se = (None if candidate_se is None or reference_se is None
          else math.hypot(candidate_se, reference_se))
    return _build(candidate_mean - reference_mean, se, None, 0)
