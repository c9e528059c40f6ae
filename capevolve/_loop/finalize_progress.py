"""How far an interrupted or running finalize got; reads DuckDB only while a seal is taken and
final.json is missing.
"""

from __future__ import annotations

from capevolve._loop.frozen_config import run_config
from capevolve._store import seal
from capevolve._store.evals import eval_id_for
from capevolve._store.rundir import RunDir
from capevolve.kinds import SEED_ID, SealStatus, Split


def progress(run: RunDir) -> str | None:
    """How many test units an unfinished finalize has scored, in words; None before finalize or
    once complete."""
    taken = seal.read_seal(run.layout)
    if taken is None or taken.status == SealStatus.COMPLETE or run.layout.final.is_file():
        return None
    from capevolve._store.rollouts.evalrows import eval_rows  # DuckDB: only for this count

    trials = run_config(run).num_trials
    sides = {str(taken.best_id), str(taken.baseline_id or SEED_ID)}
    total = len(run.splits.ids(Split.TEST)) * trials * len(sides)
    scored = sum(len(eval_rows(run.layout, eval_id_for(Split.TEST, side, trials))
                     .done_units(valid_only=True))
                 for side in sorted(sides))
    if seal.holder_alive(run.layout):
        return f"finalize running: {scored} of {total} test units scored"
    return (f"finalize interrupted: {scored} of {total} test units scored; rerun finalize to "
            "complete")
