"""Gate policies: should a candidate replace the current best? (pure, no I/O)

The paired gate compares per-task means over the val tasks scored on both sides:

- coverage (tasks scored on both sides / val tasks) below ``min_coverage`` -> indecisive
  (an outage is missing data, never a rejection);
- fewer than 2 comparable tasks -> indecisive;
- a task the best passed on every trial and the candidate passed on none is a regression;
  with ``no_regression`` any regression vetoes (reject), even when the mean rises;
- accept iff delta > 0, delta >= min_delta and (the move is exact or delta > k_se * SE);
- otherwise reject.

The Welch gate uses the same rules on the two unpaired samples but refuses (indecisive)
when the two sides were scored on different tasks: denominators must match.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping

from capevolve.config import GateConfig
from capevolve.kinds import Decision, GateMode
from capevolve.stats import (
    Comparison,
    minimum_detectable_effect,
    paired_comparison,
    paired_regressions,
    summary_comparison,
    trials_needed,
    welch_comparison,
)

PASS_REWARD = 1.0 - 1e-9


@dataclass(frozen=True)
class SideOutcomes:
    """One side of a gate: per-task mean reward and pass rate over valid trials."""

    means: Mapping[str, float]
    pass_rates: Mapping[str, float]

    @classmethod
    def from_rewards(cls, rewards: Mapping[str, list[float]]) -> SideOutcomes:
        scored = {t: r for t, r in rewards.items() if r}
        return cls(
            means={t: sum(r) / len(r) for t, r in scored.items()},
            pass_rates={t: sum(x >= PASS_REWARD for x in r) / len(r) for t, r in scored.items()},
        )


@dataclass(frozen=True)
class GateDecision:
    """A gate's verdict with every number behind it."""

    decision: Decision
    delta: float | None
    se: float | None
    t: float | None
    df: float | None
    p_value: float | None
    k_se: float
    coverage: float | None
    regressions: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    mode: str = GateMode.PAIRED
    n_compared: int = 0
    confidence: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "decision": str(self.decision), "delta": self.delta, "se": self.se, "t": self.t,
            "df": self.df, "p_value": self.p_value, "k_se": self.k_se,
            "coverage": self.coverage, "regressions": list(self.regressions),
            "reasons": list(self.reasons), "mode": str(self.mode),
            "n_compared": self.n_compared, "confidence": self.confidence,
        }


def _from_comparison(decision: Decision, comparison: Comparison | None, k_se: float,
                     coverage: float | None, reasons: list[str], mode: GateMode,
                     regressions: list[str] = ()) -> GateDecision:
    numbers = comparison.to_dict() if comparison else {}
    return GateDecision(
        decision=decision, delta=numbers.get("delta"), se=numbers.get("se"),
        t=numbers.get("t"), df=numbers.get("df"), p_value=numbers.get("p_value"), k_se=k_se,
        coverage=coverage, regressions=sorted(regressions), reasons=reasons, mode=mode,
        n_compared=numbers.get("n", 0), confidence=numbers.get("confidence"),
    )


def _verdict(comparison: Comparison, k_se: float, min_delta: float) -> tuple[Decision, str]:
    delta, se = comparison.delta, comparison.se
    if delta <= 0 or delta < min_delta - 1e-12:
        return Decision.REJECT, (f"delta {delta:+.4f} is not an improvement of at least "
                                 f"min_delta {min_delta:g}")
    if comparison.exact:
        return Decision.ACCEPT, f"exact move: zero SE, delta {delta:+.4f} >= min_delta"
    if se is None:
        return Decision.REJECT, "no standard error: cannot show the gain exceeds noise"
    if delta > k_se * se:
        return Decision.ACCEPT, f"delta {delta:+.4f} > {k_se:g} x SE {se:.4f}"
    return Decision.REJECT, f"delta {delta:+.4f} <= {k_se:g} x SE {se:.4f} (within noise)"


def decide(candidate: SideOutcomes, best: SideOutcomes, val_ids: list[str] | tuple[str, ...],
           config: GateConfig, k_se: float | None = None,
           mode: GateMode | None = None) -> GateDecision:
    """Gate ``candidate`` against ``best`` on the full val split (see module docstring)."""
    k_se = config.k_se if k_se is None else k_se
    mode = GateMode(mode or config.mode)
    val = set(val_ids)
    common = sorted(set(candidate.means) & set(best.means) & val)
    coverage = len(common) / len(val) if val else 0.0
    if coverage < config.min_coverage:
        return _from_comparison(Decision.INDECISIVE, None, k_se, coverage, [
            f"coverage {coverage:.2f} below the floor {config.min_coverage:g}: "
            "too many val tasks unscored (missing data, not a rejection)"], mode)
    if len(common) < 2:
        return _from_comparison(Decision.INDECISIVE, None, k_se, coverage,
                                ["fewer than 2 val tasks scored on both sides"], mode)
    if mode == GateMode.WELCH:
        cand_ids, best_ids = set(candidate.means) & val, set(best.means) & val
        if cand_ids != best_ids:
            return _from_comparison(Decision.INDECISIVE, None, k_se, coverage, [
                f"denominators differ ({len(cand_ids)} vs {len(best_ids)} scored tasks): "
                "comparison refused"], mode)
        comparison = welch_comparison([candidate.means[t] for t in common],
                                      [best.means[t] for t in common], config.min_delta)
    else:
        comparison = paired_comparison({t: candidate.means[t] for t in common},
                                       {t: best.means[t] for t in common}, config.min_delta)
    decision, reason = _verdict(comparison, k_se, config.min_delta)
    reasons = [reason]
    regressions = paired_regressions({t: candidate.pass_rates[t] for t in common},
                                     {t: best.pass_rates[t] for t in common})
    if regressions and config.no_regression:
        if decision == Decision.ACCEPT:
            decision = Decision.REJECT
        reasons.append(f"no-regression veto: {len(regressions)} val task(s) the best passed "
                       f"on every trial now fail every trial: {', '.join(regressions[:10])}")
    return _from_comparison(decision, comparison, k_se, coverage, reasons, mode, regressions)


def design_power(candidate: Mapping[str, list[float]], best: Mapping[str, list[float]],
                 min_delta: float) -> dict[str, Any] | None:
    """How sensitive this val design is: the minimum detectable paired effect (alpha 0.05,
    power 0.8) at the trials used, and the trials per task needed to detect ``min_delta``.

    sd_within pools the trial-to-trial SD around each task mean over both sides;
    sd_between is the SD of the per-task differences with the trial noise removed.
    """
    common = [t for t in candidate if candidate[t] and best.get(t)]
    if len(common) < 2:
        return None
    deviations, trials = [], []
    for rewards in [candidate[t] for t in common] + [best[t] for t in common]:
        mean = sum(rewards) / len(rewards)
        deviations += [(r - mean) ** 2 for r in rewards]
        trials.append(len(rewards))
    dof = len(deviations) - 2 * len(common)
    sd_within = math.sqrt(sum(deviations) / dof) if dof > 0 else 0.0
    k = min(trials)
    diffs = [sum(candidate[t]) / len(candidate[t]) - sum(best[t]) / len(best[t]) for t in common]
    mean_d = sum(diffs) / len(diffs)
    var_d = sum((d - mean_d) ** 2 for d in diffs) / (len(diffs) - 1)
    sd_between = math.sqrt(max(0.0, var_d - 2 * sd_within**2 / k))
    return {
        "n_tasks": len(common), "trials": k, "sd_within": sd_within, "sd_between": sd_between,
        "mde": minimum_detectable_effect(sd_between, sd_within, len(common), k),
        "trials_for_min_delta": trials_needed(sd_between, sd_within, len(common), min_delta)
        if min_delta > 0 else None,
    }


def decide_from_summary(current: float, candidate: float, current_se: float,
                        candidate_se: float, k_se: float,
                        min_delta: float = 0.0) -> GateDecision:
    """The raw gate for numbers computed elsewhere (unpaired: SE = sqrt(a^2 + b^2))."""
    comparison = summary_comparison(candidate, candidate_se, current, current_se, min_delta)
    decision, reason = _verdict(comparison, k_se, min_delta)
    return _from_comparison(decision, comparison, k_se, None, [reason], GateMode.WELCH)
