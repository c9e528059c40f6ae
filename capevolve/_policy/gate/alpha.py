"""False accepts: a gate's critical value from alpha, and a run's risk.

Accept iff t > c, the one-sided (1 - a) t quantile. The ledger sums a over distinct decisive pairs
(keep-best: a tentative keep 1, a significant one a).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from capevolve._policy.gate.loop_alpha import stage_alpha
from capevolve.config import GateConfig
from capevolve.kinds import AlphaSpending, Decision
from capevolve.records import GateLedger
from capevolve.stats import t_quantile
from capevolve.stats.power import t_tail


def per_gate_alpha(config: GateConfig, max_iterations: int) -> float:
    """One gate's one-sided level (each stage's under ``confirm``)."""
    if config.alpha_spending == AlphaSpending.RUN:
        return config.alpha / max(1, max_iterations)
    if config.alpha_spending == AlphaSpending.CONFIRM and max_iterations >= 1:
        return stage_alpha(config.alpha, max_iterations)
    return config.alpha  # (a lone gate under confirm, outside any budgeted run: alpha)


def gate_risk(config: GateConfig, max_iterations: int) -> float:
    """P(a gate accepts a no-better candidate): a, or a * a under confirm."""
    a = per_gate_alpha(config, max_iterations)
    return a * a if config.alpha_spending == AlphaSpending.CONFIRM and max_iterations >= 1 \
        else a


def guarantee(config: GateConfig, max_iterations: int, keep_best: bool = False) -> str:
    """The loop's guarantee, in one sentence."""
    if keep_best:
        return ("keep-best keeps point estimates: no bound on promoting a no-better "
                "candidate (its label says whether the move is shown beyond noise)")
    if config.k_se is not None:
        return (f"a fixed k_se {config.k_se:g} bounds neither a gate nor the loop by alpha "
                "(each gate records the false-accept probability it implies)")
    if config.alpha_spending == AlphaSpending.PER_GATE:
        return (f"each gate accepts a no-better candidate with probability at most "
                f"{config.alpha:g}; the loop is not bounded (up to {config.alpha:g} per gate)")
    how = ("each gate tests at alpha / max_iterations" if config.alpha_spending
           == AlphaSpending.RUN else "a screen then a confirmation on fresh trials, each "
           f"at {per_gate_alpha(config, max_iterations):.4g}")
    return (f"a loop of at most {max_iterations} decisions promotes a candidate no better "
            f"than its best with probability at most {config.alpha:g} ({how})")


def critical_value(config: GateConfig, df: float | None,
                   max_iterations: int) -> tuple[float, float]:
    """``(c, a)``: accept iff t > c; a = P(T_df > c)."""
    if config.k_se is not None:
        return config.k_se, t_tail(config.k_se, df)
    a = per_gate_alpha(config, max_iterations)
    return t_quantile(1.0 - a, df), a


@dataclass(frozen=True)
class GateTally:
    """One gate's ledger entry."""

    exploratory: bool
    decision: Decision
    alpha: float | None
    pair: tuple[str, str]
    """(candidate eval id, best eval id)."""
    tentative: bool = False
    """keep-best: kept within noise, not since confirmed."""


def _decisive_pairs(tallies: Iterable[GateTally],
                    keep_best: bool = False) -> dict[tuple[str, str], float]:
    spent: dict[tuple[str, str], float] = {}
    for tally in tallies:
        if tally.exploratory or tally.decision == Decision.INDECISIVE:
            continue
        risk = tally.alpha or 0.0
        if keep_best:
            risk = 0.0 if tally.decision != Decision.ACCEPT else 1.0 if tally.tentative \
                else risk
        spent[tally.pair] = max(spent.get(tally.pair, 0.0), risk)
    return spent


def run_alpha_refusal(tallies: Iterable[GateTally], config: GateConfig, max_iterations: int,
                      pair: tuple[str, str], measured: int) -> str | None:
    """Why ``run`` spending refuses a new ``pair`` (None: allowed): pairs or ``measured`` candidates
    past max_iterations."""
    if config.alpha_spending != AlphaSpending.RUN:
        return None
    spent = _decisive_pairs(tallies)
    if pair in spent:
        return None
    spread = (f"the budget.max_iterations ({max_iterations}) that gate.alpha "
              f"{config.alpha:g} is spread over (alpha_spending: run)")
    if len(spent) + 1 > max_iterations:
        return (f"alpha spent: {len(spent)} evaluation pairs already had a deciding gate, "
                f"{spread}; finalize the run")
    if measured > max_iterations:
        return (f"alpha spent: {measured} candidates were measured on val, more than "
                f"{spread}; the best-looking of them is no longer a fair draw")
    return None


def false_accept_summary(tallies: Iterable[GateTally], config: GateConfig,
                         max_iterations: int, keep_best: bool = False) -> GateLedger:
    """The run's false-accept ledger."""
    items = list(tallies)
    decisive = _decisive_pairs(items, keep_best)
    fixed = config.k_se is not None
    per_gate = None if fixed else gate_risk(config, max_iterations)
    planned = None
    if per_gate is not None and max_iterations > 0 and not keep_best:
        planned = min(1.0, per_gate * max_iterations)
    tentative = {t.pair for t in items if t.tentative and not t.exploratory
                 and t.decision == Decision.ACCEPT} if keep_best else set()
    return GateLedger(
        gates=len(items), decision_gates=sum(not t.exploratory for t in items),
        exploratory_gates=sum(t.exploratory for t in items), distinct_pairs=len(decisive),
        expected_false_accepts=sum(decisive.values()), alpha=config.alpha,
        alpha_spending=str(config.alpha_spending), per_gate_alpha=per_gate,
        planned_bound=planned, guarantee=guarantee(config, max_iterations, keep_best),
        keep_best=keep_best, tentative_keeps=len(tentative))
