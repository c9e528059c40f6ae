"""What a loop reports, from stored records only."""

from __future__ import annotations

from typing import Any

from capevolve._loop.gate_evals import gateable_val
from capevolve._policy.budget import optimizer_spend
from capevolve.kinds import SEED_ID
from capevolve.optimize.session import Session
from capevolve.records._optimize import IterationRecord


def iteration_row(r: IterationRecord) -> dict[str, Any]:
    """The table row of one iteration."""
    g = r.gate
    return {"iteration": r.iteration, "parent": r.parent_id, "child": r.child_id,
            "outcome": str(r.outcome), "focus": r.focus,
            "title": r.detail.get("title") or r.detail.get("edit"),
            "files": len(r.diff.added) + len(r.diff.modified) + len(r.diff.removed),
            "screen": None if r.screen is None else r.screen.decision,
            "val_child": g.child_mean if g else None, "val_best": g.parent_mean if g else None,
            "delta": g.delta if g else None, "se": g.se if g else None,
            "power": g.power if g else None,
            "reason": r.reasons[0] if r.reasons else None, "metric_calls": r.metric_calls,
            "proposer_tokens": r.spend.tokens, "proposer_cost_usd": r.spend.cost_usd,
            "wall_s": round(r.wall_s, 3), "overhead_s": round(r.overhead_s, 3)}


def loop_summary(s: Session, stop_reason: str, plateau: str | None,
                 final: dict[str, Any] | None, not_finalized: str | None = None
                 ) -> dict[str, Any]:
    best, seed = (gateable_val(s.run, c) for c in (s.run.best_id, SEED_ID))
    return {
        "run_dir": str(s.run.root), "algorithm": s.algorithm.name, "proposer": s.proposer_spec,
        "iterations": [iteration_row(r) for r in s.ledger], "stop_reason": stop_reason,
        "plateau": plateau, "best_id": s.run.best_id,
        "best_val": None if best is None else {"mean": best.mean, "stderr": best.stderr},
        "seed_val": None if seed is None else {"mean": seed.mean, "stderr": seed.stderr},
        "stop_condition": s.stop.to_dict(),
        "spend": {"run": s.run.spent.to_dict(), "optimizer": optimizer_spend(s.ledger)},
        "final": final, "not_finalized": not_finalized,
    }
