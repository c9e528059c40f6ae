"""Read a candidate's trials on a split in (task, trial) order, from its evaluation with the most
rows (then the latest, then the larger eval id).
"""

from __future__ import annotations

from collections.abc import Collection
from itertools import repeat
from typing import NamedTuple

import pyarrow as pa
import pyarrow.compute as pc

from capevolve._policy import splits as policy_splits
from capevolve._store.rollouts.query import RolloutStore
from capevolve._store.rundir import RunDir
from capevolve.errors import CandidateError
from capevolve.kinds import Split


class Trial(NamedTuple):
    """One stored rollout row (JSON columns as text)."""

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
    def unit_id(self) -> str:
        """``task_id#trial``: the id of this datapoint in diagnoses and censuses."""
        return f"{self.task_id}#{self.trial}"


_COLUMNS = Trial._fields  # the columns read, in order


def refuse_test(split: str) -> Split:
    """The split as a Split; the held-out test split is refused."""
    return policy_splits.refuse_test(split, "diagnose")


_WHERE = "split = $split AND candidate_id = $candidate"
_PICK = f"""SELECT eval_id FROM rollouts WHERE {_WHERE}
        GROUP BY eval_id
        ORDER BY count(*) DESC, max(finished_at) DESC NULLS LAST, eval_id DESC
        LIMIT 1"""


class TraceUnread(Exception):
    """A needed trace was left unread (``trace_where``)."""


class TrialRows(NamedTuple):
    """An evaluation's trials and the indices of those read without their trace."""

    trials: list[Trial]
    unread: Collection[int]


def load_trials(run: RunDir, split: str, candidate_id: str) -> list[Trial]:
    """Every stored trial of ``candidate_id`` on ``split``, traces included."""
    return read_trials(run, split, candidate_id).trials


def read_trials(run: RunDir, split: str, candidate_id: str,
                trace_where: str | None = None) -> TrialRows:
    """Every stored trial of ``candidate_id`` on ``split``, traces where ``trace_where`` holds (all
    without one). CandidateError when there is none."""
    split = refuse_test(split)
    run.candidate_meta(candidate_id)
    columns = list(_COLUMNS)
    rows = f"SELECT * FROM rollouts WHERE {_WHERE} AND eval_id = ({_PICK})"
    if trace_where is not None:  # the guess is evaluated once per row
        columns[_COLUMNS.index("trace")] = "CASE WHEN _trace_read THEN trace END AS trace"
        columns.append("_trace_read")
        rows = f"SELECT *, coalesce({trace_where}, false) AS _trace_read FROM ({rows})"
    table = RolloutStore(run.layout).table(
        f"SELECT {', '.join(columns)} FROM ({rows})",
        candidate_id=candidate_id, params={"split": str(split), "candidate": candidate_id})
    if table.num_rows == 0:
        raise CandidateError(f"candidate {candidate_id!r} has no stored rollouts on {split}; "
                             "evaluate it first")
    return trials_of(table)


def trials_of(table: pa.Table) -> TrialRows:
    """An Arrow table of ``_COLUMNS`` as Trials ordered by (task, trial)."""
    keys = [("task_id", "ascending"), ("trial", "ascending")]
    order = pc.sort_indices(table.select(["task_id", "trial"]), sort_keys=keys).to_pylist()
    stored_in_order = order == list(range(len(order)))  # parts written in unit order
    columns = [table.column(name).to_pylist() for name in _COLUMNS]
    trial, reward = columns[2], columns[3]
    if not pa.types.is_integer(table.schema.field("trial").type):
        columns[2] = [int(t) for t in trial]
    if not pa.types.is_float64(table.schema.field("reward").type):
        columns[3] = [None if r is None else float(r) for r in reward]
    # no per-row check: the columns are exactly Trial's fields
    rows = list(map(tuple.__new__, repeat(Trial), zip(*columns, strict=True)))
    read = (table.column("_trace_read").to_pylist() if "_trace_read" in table.column_names
            else None)
    if not stored_in_order:
        rows = [rows[i] for i in order]
        read = None if read is None else [read[i] for i in order]
    unread = [] if read is None else [i for i, was_read in enumerate(read) if not was_read]
    return TrialRows(rows, frozenset(unread))
