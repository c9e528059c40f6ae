"""The run's false-accept ledger, from its gate events alone; loads no Arrow or DuckDB."""

from __future__ import annotations

from capevolve._loop.frozen_config import run_config
from capevolve._policy.gate.alpha import GateTally, false_accept_summary
from capevolve._policy.keep_best import tentative
from capevolve._store.rundir import RunDir
from capevolve.kinds import Confidence, Decision, EventKind, GatePolicy
from capevolve.records import GateEvent, GateLedger


def false_accept_ledger(run: RunDir) -> GateLedger:
    """The ledger of this run's gates, for status and the report."""
    config = run_config(run)
    return false_accept_summary(gate_tallies(run), config.gate, config.budget.max_iterations,
                                keep_best=config.gate.policy == GatePolicy.KEEP_BEST)


def gate_tallies(run: RunDir) -> list[GateTally]:
    """Each gate's share of the ledger (a keep-best keep is tentative until labelled or
    confirmed significant)."""
    gates = [g for g in run.events(EventKind.GATE) if isinstance(g, GateEvent)]
    confirmed = _confirmed(run) if any(g.policy == GatePolicy.KEEP_BEST for g in gates) \
        else set()
    return [GateTally(exploratory=bool(g.exploratory), decision=Decision(g.decision),
                      alpha=g.alpha, pair=(g.candidate_eval or "", g.best_eval or ""),
                      tentative=(g.policy == GatePolicy.KEEP_BEST
                                 and tentative(Decision(g.decision), g.confidence)
                                 and (g.candidate_id, str(g.best_id)) not in confirmed))
            for g in gates]


def _confirmed(run: RunDir) -> set[tuple[str, str]]:
    """(candidate, best) of each kept move a confirmation labelled significant."""
    from capevolve._loop.standing import stored_confirmations

    return {(cand, str(ref)) for cand, ref, label in stored_confirmations(run)
            if label == Confidence.SIGNIFICANT}
