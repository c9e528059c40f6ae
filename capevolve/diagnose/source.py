"""Read one candidate's trials on one split from the store, in one DuckDB query.

Which evaluation is read: a candidate may have several evaluations on a split (different
trial counts). The one with the most stored rows is used; ties go to the one whose last
row finished latest, then to the larger eval id. Rows come back ordered by (task, trial).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from capevolve._policy import splits as policy_splits
from capevolve._store.rollouts.query import RolloutStore
from capevolve._store.rundir import RunDir
from capevolve.errors import CandidateError
from capevolve.kinds import Split

_COLUMNS = ("eval_id", "task_id", "trial", "reward", "feedback", "score_parts", "output",
            "inputs", "tool_calls", "trace", "trajectory", "error", "error_kind")


class Trial(NamedTuple):
    """One stored rollout row, as diagnosis needs it (JSON columns kept as text; a tuple:
    a diagnosis reads every row of an evaluation at once)."""

    eval_id: str
    task_id: str
    trial: int
    reward: float | None  # None when errored: missing data, never a failure
    feedback: str | None
    score_parts: str | None
    output: str | None
    inputs: str | None
    tool_calls: str | None
    trace: str | None
    trajectory: str | None
    error: str | None
    error_kind: str | None

    @property
    def errored(self) -> bool:
        """True when the trial has no reward (infrastructure failure)."""
        return self.reward is None

    @property
    def unit_id(self) -> str:
        """``task_id#trial``: the id of this datapoint in diagnoses and censuses."""
        return f"{self.task_id}#{self.trial}"


def refuse_test(split: str) -> Split:
    """The split as a Split; the held-out test split is refused (it is never diagnosed)."""
    return policy_splits.refuse_test(split, "diagnose")


def _quote(text: str) -> str:
    return str(text).replace("'", "''")


def load_trials(run: RunDir, split: str, candidate_id: str) -> list[Trial]:
    """Every stored trial of ``candidate_id`` on ``split`` (see the module docstring for
    which evaluation); CandidateError for an unknown candidate or one with no rollouts."""
    split = refuse_test(split)
    run.candidate_meta(candidate_id)
    where = f"split = '{_quote(split)}' AND candidate_id = '{_quote(candidate_id)}'"
    sql = f"""
        WITH pick AS (
            SELECT eval_id FROM rollouts WHERE {where}
            GROUP BY eval_id
            ORDER BY count(*) DESC, max(finished_at) DESC NULLS LAST, eval_id DESC
            LIMIT 1)
        SELECT {", ".join(_COLUMNS)} FROM rollouts
        WHERE {where} AND eval_id = (SELECT eval_id FROM pick)
        ORDER BY task_id, trial
    """
    _, rows = RolloutStore(run.layout).query(sql)
    if not rows:
        raise CandidateError(f"candidate {candidate_id!r} has no stored rollouts on {split}; "
                             "evaluate it first")
    return [_trial(row) for row in rows]


def _trial(row: tuple[Any, ...]) -> Trial:
    """A row of ``_COLUMNS`` as a Trial (trial as int, reward as float or None)."""
    eval_id, task_id, trial, reward, *text = row
    return Trial(eval_id, task_id, int(trial), None if reward is None else float(reward),
                 *text)
