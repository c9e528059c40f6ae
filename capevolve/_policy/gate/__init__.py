"""The strict gate: should a candidate replace the current best? (pure, no I/O)

The whole rule lives in this package; read ``decide`` here, then its parts in the order it
calls them: ``outcomes``, ``completeness``, ``thresholds``, ``alpha`` and ``loop_alpha``,
``regression``, ``labels``, ``power``; ``confirm`` is the fresh-trial confirmation.
After ``completeness``: reject unless delta > 0 and delta >= min_delta; accept an exact move
(no trial noise, nothing imputed, equal paired differences); reject equal differences from
noisy trials; else accept iff t > c. ``no_regression`` vetoes an accept that regressed a task.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from capevolve._policy.gate.alpha import critical_value
from capevolve._policy.gate.completeness import comparable
from capevolve._policy.gate.labels import confidence
from capevolve._policy.gate.outcomes import SideOutcomes
from capevolve._policy.gate.power import gate_power
from capevolve._policy.gate.regression import regressions
from capevolve._policy.gate.thresholds import all_equal, below, exceeds, require_finite
from capevolve.config import GateConfig
from capevolve.errors import GateError
from capevolve.kinds import Decision, GateMode
from capevolve.records import GateNumbers
from capevolve.stats import Comparison, paired_comparison, summary_comparison, welch_comparison
from capevolve.stats.power import t_tail

__all__ = ["GateNumbers", "SideOutcomes", "decide", "decide_from_summary"]


def one_sided(t: float | None, df: float | None) -> float | None:
    """P(T_df >= t) (None when t is)."""
    return None if t is None else t_tail(t, df)


def _verdict(comparison: Comparison, exact: bool, degenerate: bool, critical: float,
             min_delta: float) -> tuple[Decision, str]:
    delta, se = comparison.delta, comparison.se
    if not exceeds(delta, 0.0) or below(delta, min_delta):
        return Decision.REJECT, (f"delta {delta:+.4f} is not an improvement of at least "
                                 f"min_delta {min_delta:g}")
    if exact:
        return Decision.ACCEPT, (f"exact move (no trial noise on either side): delta "
                                 f"{delta:+.4f} >= min_delta {min_delta:g}")
    if degenerate:
        return Decision.REJECT, ("every paired difference is equal although the trials are "
                                 "noisy: the noise cannot be estimated, so the gain is not "
                                 "shown beyond it")
    if se is None:
        return Decision.REJECT, "no standard error: cannot show the gain exceeds noise"
    if exceeds(delta, critical * se):
        return Decision.ACCEPT, f"delta {delta:+.4f} > {critical:.3f} x SE {se:.4f}"
    return Decision.REJECT, f"delta {delta:+.4f} <= {critical:.3f} x SE {se:.4f} (within noise)"


def _compare(candidate: SideOutcomes, best: SideOutcomes, tasks: Sequence[str],
             imputed: Sequence[str], mode: GateMode,
             clusters: Mapping[str, str]) -> tuple[Comparison, list[float], bool, bool]:
    """(comparison, differences, exact, degenerate): paired (CR1 if clustered) or Welch."""
    import numpy as np

    missing = set(imputed)
    zero = np.fromiter((t in missing for t in tasks), dtype=bool, count=len(tasks))
    cand_means = np.where(zero, 0.0, candidate.aligned(tasks).mean)
    ref_means = best.aligned(tasks).mean
    cand_list, ref_list = cand_means.tolist(), ref_means.tolist()
    diffs = (cand_means - ref_means).tolist()
    noiseless = not imputed and candidate.noiseless(tasks) and best.noiseless(tasks)
    if mode == GateMode.WELCH:
        comparison = welch_comparison(cand_list, ref_list)
        spread_free = all_equal(cand_list) and all_equal(ref_list)
    else:
        comparison = paired_comparison(dict(zip(tasks, cand_list, strict=True)),
                                       dict(zip(tasks, ref_list, strict=True)),
                                       clusters or None)
        spread_free = all_equal(diffs)
    exact, degenerate = noiseless and spread_free, spread_free and not noiseless
    if spread_free:  # t and p are undefined: no spread to scale the delta by
        comparison = Comparison(comparison.delta, 0.0, None, comparison.df, None,
                                comparison.n, comparison.n_clusters)
    return comparison, diffs, exact, degenerate


def decide(candidate: SideOutcomes, best: SideOutcomes, val_ids: Sequence[str],
           config: GateConfig, *, max_iterations: int = 0,
           clusters: Mapping[str, str] | None = None) -> GateNumbers:
    """Gate ``candidate`` against ``best`` on the full val split."""
    mode = GateMode(config.mode)
    scope = comparable(candidate, best, val_ids, config)
    if scope.reason is not None:
        return GateNumbers(decision=Decision.INDECISIVE, reasons=[scope.reason], mode=mode,
                           coverage=scope.coverage, imputed=list(scope.imputed))
    comparison, diffs, exact, degenerate = _compare(
        candidate, best, scope.compared, scope.imputed, mode, clusters or {})
    critical, alpha = critical_value(config, comparison.df, max_iterations)
    decision, reason = _verdict(comparison, exact, degenerate, critical, config.min_delta)
    reasons = [reason]
    if scope.imputed:
        reasons.append(f"{len(scope.imputed)} val task(s) the best scored and the candidate "
                       f"did not count as 0 for it: {', '.join(scope.imputed[:10])}")
    broken = regressions(candidate, best, scope.compared, config.regression_drop)
    if broken and config.no_regression:
        if decision == Decision.ACCEPT:
            decision = Decision.REJECT
        reasons.append(f"no-regression veto: {len(broken)} val task(s) dropped by more than "
                       f"{config.regression_drop:g} and beyond their trials' noise: "
                       f"{', '.join(broken[:10])}")
    numbers = comparison.to_dict()
    return GateNumbers(
        decision=decision, reasons=reasons, mode=mode, coverage=scope.coverage,
        delta=numbers["delta"], se=numbers["se"], t=numbers["t"], df=numbers["df"],
        p_value=numbers["p_value"], p_one_sided=one_sided(comparison.t, comparison.df),
        k_se=critical, alpha=0.0 if exact else alpha, exact=exact, n_compared=len(scope.compared),
        n_clusters=comparison.n_clusters, imputed=list(scope.imputed), regressions=broken,
        confidence=confidence(comparison.delta, comparison.se, comparison.df,
                              config.min_delta, exact, critical),
        power=gate_power(candidate, best, diffs, comparison.se, comparison.df, critical,
                         config.min_delta) if not (exact or degenerate) else None,
    )


def decide_from_summary(current: float, candidate: float, current_se: float,
                        candidate_se: float, config: GateConfig) -> GateNumbers:
    """The gate on summaries computed elsewhere (unpaired, normal); GateError on bad input."""
    values = {"--current": current, "--candidate": candidate,
              "--current-stderr": current_se, "--candidate-stderr": candidate_se}
    for name, value in values.items():
        require_finite(value, name)
    for name in ("--current-stderr", "--candidate-stderr"):
        if values[name] < 0:
            raise GateError(f"{name}: {values[name]!r} must be >= 0")
    comparison = summary_comparison(candidate, candidate_se, current, current_se)
    exact = comparison.se == 0.0
    critical, alpha = critical_value(config, None, 0)
    decision, reason = _verdict(comparison, exact, False, critical, config.min_delta)
    numbers = comparison.to_dict()
    return GateNumbers(
        decision=decision, reasons=[reason], mode=GateMode.WELCH, delta=numbers["delta"],
        se=numbers["se"], t=numbers["t"], df=None, p_value=numbers["p_value"],
        p_one_sided=one_sided(comparison.t, None), k_se=critical,
        alpha=0.0 if exact else alpha, exact=exact,
        confidence=confidence(comparison.delta, comparison.se, None, config.min_delta, exact,
                              critical))
