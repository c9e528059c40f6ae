"""What a configured run will spend before it spends it: rollouts x tokens x prices.

Dollars without a price are None, never 0.
"""

from __future__ import annotations

from typing import Any

from capevolve._loop.frozen_config import run_config
from capevolve._loop.models_pin import run_settings
from capevolve._policy.gate import loop_alpha
from capevolve._store.evals import latest_complete_eval
from capevolve._store.rollouts.query import RolloutStore
from capevolve._store.rundir import RunDir
from capevolve.errors import StoreError
from capevolve.kinds import Split


def _per_rollout(run: RunDir) -> tuple[str, list[int], list[float | None]]:
    """(source, [low, high] tokens, [low, high] dollars) of one rollout."""
    try:
        _, rows = RolloutStore(run.layout).query(
            "SELECT min(tokens), max(tokens), min(cost_usd), max(cost_usd), "
            "count(*) FILTER (WHERE cost_usd IS NULL) FROM rollouts WHERE usage IS NOT NULL")
    except StoreError:
        rows = []
    if rows and rows[0][0] is not None:
        low, high, usd_low, usd_high, unpriced = rows[0]
        priced = not unpriced and usd_low is not None
        return "stored rollouts", [int(low), int(high)], \
            [usd_low, usd_high] if priced else [None, None]
    probe = run.manifest.models_check
    if not probe.get("attempts"):
        return "none", [0, 0], [None, None]
    prompt, completion = probe.get("prompt_tokens", 0), probe.get("completion_tokens", 0)
    settings = run_settings(run, "agent")
    usd = None if settings is None or settings.price is None \
        else settings.price.cost(prompt, completion)
    return "check probe", [prompt + completion] * 2, [usd, usd]


def estimate(run: RunDir, iterations: int | None = None, finalize: bool = True
             ) -> dict[str, Any]:
    """The planned spend as ranges: low is the baseline, one iteration and finalize; high is
    every iteration, capped by ``max_metric_calls``."""
    config = run_config(run)
    trials = config.num_trials
    val = len(run.splits.ids(Split.VAL)) * trials
    test = len(run.splits.ids(Split.TEST)) * trials
    done = latest_complete_eval(run, run.best_id, Split.VAL, n_trials=trials) is not None
    steps = iterations if iterations is not None else config.budget.max_iterations
    base = (0 if done else val) + (2 * test if finalize and not run.layout.final.is_file()
                                   else 0)
    looked = loop_alpha.first_look(config.gate, trials)
    least = val // trials if looked else val  # a child stopped at its first look
    rollouts = [base + least * min(1, steps), base + val * steps]
    cap = config.budget.max_metric_calls
    if cap:
        left = max(0, cap - run.spent.metric_calls)
        rollouts = [min(r, left) for r in rollouts]
    source, tokens, usd = _per_rollout(run)
    return {
        "rollouts": {"low": rollouts[0], "high": rollouts[1]},
        "per_rollout": {"source": source, "tokens": {"low": tokens[0], "high": tokens[1]},
                        "usd": {"low": usd[0], "high": usd[1]}},
        "tokens": {"low": rollouts[0] * tokens[0], "high": rollouts[1] * tokens[1]},
        "usd": {"low": None if usd[0] is None else round(rollouts[0] * usd[0], 6),
                "high": None if usd[1] is None else round(rollouts[1] * usd[1], 6)},
        "max_usd": config.budget.max_usd or None,
        "spent_usd": run.spent.cost_usd,
    }


def refusal(found: dict[str, Any]) -> str | None:
    """Why a run must not start: the low estimate passes what is left of ``max_usd``."""
    low, cap = found["usd"]["low"], found["max_usd"]
    if cap and low is not None and low + (found["spent_usd"] or 0.0) > cap:
        return (f"the estimate's lower bound ${low:.4f} ({found['rollouts']['low']} rollouts "
                f"x {found['per_rollout']['tokens']['low']} tokens) plus ${found['spent_usd']:.4f}"
                f" spent passes budget.max_usd ${cap:g}")
    return None
