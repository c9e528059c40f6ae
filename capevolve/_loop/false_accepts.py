"""The run's false-accept ledger: how many gates it recorded and the false accepts they risked.

Read from the run's gate events only (the arithmetic is ``capevolve._policy.alpha``); status
and the report show it, and the gate's alpha-budget refusal counts the same tallies. A light
module: it loads no Arrow or DuckDB.
"""

from __future__ import annotations

from capevolve._loop.frozen_config import run_config
from capevolve._policy.alpha import FalseAcceptSummary, GateTally, false_accept_summary
from capevolve._store.rundir import RunDir
from capevolve.kinds import Decision, EventKind, GatePolicy
from capevolve.records import GateEvent


def false_accept_ledger(run: RunDir) -> FalseAcceptSummary:
    """How many gates this run recorded and the false accepts they risked.

    Pure over the run's gate events (see ``capevolve._policy.alpha``); for status and the
    report.
    """
    config = run_config(run)
    return false_accept_summary(gate_tallies(run), config.gate, config.budget.max_iterations,
                                keep_best=config.gate.policy == GatePolicy.KEEP_BEST)


def gate_tallies(run: RunDir) -> list[GateTally]:
    """What each recorded gate contributes to the false-accept ledger."""
    return [GateTally(exploratory=bool(g.exploratory), decision=Decision(g.decision),
                      alpha=g.alpha, pair=(g.candidate_eval or "", g.best_eval or ""))
            for g in run.events(EventKind.GATE) if isinstance(g, GateEvent)]
