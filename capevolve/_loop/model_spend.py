"""Model spend by role, from what is stored; ``partial`` cost is a lower bound."""

from __future__ import annotations

from typing import Any

from capevolve._store.rundir import RunDir
from capevolve.errors import StoreError
from capevolve.kinds import EvaluatorKind

_SQL = """SELECT
  count(usage), coalesce(sum(tokens) FILTER (WHERE usage IS NOT NULL), 0),
  sum(cost_usd) FILTER (WHERE usage IS NOT NULL),
  count(*) FILTER (WHERE usage IS NOT NULL AND (cost_usd IS NULL OR unknown_attempts > 0
                   OR usage LIKE '%"unpriced_calls":%' AND usage NOT LIKE '%"unpriced_calls":0%')),
  coalesce(sum(unknown_attempts), 0),
  count(judge_tokens), coalesce(sum(judge_tokens), 0), sum(judge_cost_usd),
  count(*) FILTER (WHERE judge_tokens IS NOT NULL AND judge_cost_usd IS NULL)
FROM rollouts"""


def _role(tokens: int, cost: float | None, partial: bool, **extra: Any) -> dict[str, Any]:
    return {"tokens": int(tokens), "cost_usd": None if cost is None else round(cost, 6),
            "partial": bool(partial), **extra}


def model_spend(run: RunDir, proposer: dict[str, Any] | None = None) -> dict[str, Any]:
    """``{agent, judge, check[, proposer]}``: tokens, cost_usd (None: unpriced) and partial per
    role."""
    out: dict[str, Any] = {}
    config = run.manifest.config
    calls = bool(run.manifest.models) or any(e.kind == EvaluatorKind.JUDGE
                                             for e in config.evaluators)
    rows: list = []
    try:  # (a run that calls no model reads no rows: status stays light)
        if calls:
            from capevolve._store.rollouts.query import RolloutStore

            _, rows = RolloutStore(run.layout).query(_SQL)
    except StoreError:  # parts from before the model columns: nothing recorded
        rows = []
    if rows:
        (n, tokens, cost, unpriced, unknown, jn, jtokens, jcost, junpriced) = rows[0]
        if n:
            out["agent"] = _role(tokens, cost, unpriced > 0, rollouts=int(n),
                                 unknown_attempts=int(unknown))
        if jn:
            out["judge"] = _role(jtokens, jcost, junpriced > 0, rows=int(jn))
    check = run.manifest.models_check
    if check.get("attempts"):
        priced = check["attempts"] - check.get("unknown_attempts", 0) \
            - check.get("rejected_attempts", 0) - check.get("unpriced_calls", 0)
        out["check"] = _role(check.get("prompt_tokens", 0) + check.get("completion_tokens", 0),
                             check.get("cost_usd") if priced > 0 else None,
                             bool(check.get("unknown_attempts") or check.get("unpriced_calls")))
    if proposer and (proposer.get("tokens") or proposer.get("cost_unrecorded")):
        out["proposer"] = _role(proposer["tokens"], proposer.get("cost_usd"),
                                bool(proposer.get("cost_unrecorded")))
    return out
