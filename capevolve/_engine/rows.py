"""Turning one executed unit (rollout + score or failure) into a storage row."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from capevolve.adapter import Rollout, Score, Task
from capevolve._engine.contract import EvalJob
from capevolve._engine.plan import WorkUnit
from capevolve.kinds import ErrorKind
from capevolve._store.rollouts.schema import SCHEMA_VERSION

MAX_ERROR_CHARS = 2000


def to_json_text(value: Any) -> str | None:
    """Canonical JSON text of a value (None stays None; unserialisable values as repr)."""
    if value is None:
        return None
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=repr)


def output_text(value: Any) -> str | None:
    """The agent's output as text: strings as they are, anything else as JSON."""
    return value if isinstance(value, str) or value is None else to_json_text(value)


def bounded(message: str) -> str:
    """An error message cut to a bounded length."""
    return message if len(message) <= MAX_ERROR_CHARS else message[:MAX_ERROR_CHARS] + " [...]"


def base_row(job: EvalJob, unit: WorkUnit, task: Task, worker_id: str, node_id: str) -> dict:
    """The key columns of a unit's row, shared by every outcome."""
    return {
        "schema_version": SCHEMA_VERSION, "run_id": job.run_id, "eval_id": job.eval_id,
        "split": job.split, "candidate_id": job.candidate_id,
        "candidate_hash": job.candidate_hash, "task_id": unit.task_id, "trial": unit.trial,
        "seed": unit.seed, "inputs": to_json_text(task.input), "worker_id": worker_id,
        "node_id": node_id,
    }


def fill_outcome(row: dict, rollout: Rollout | None, score: Score | None,
                 error: str | None, error_kind: ErrorKind | None) -> dict:
    """Add the rollout, score and error columns; reward is null whenever there is an error."""
    if rollout is not None:
        row.update(
            output=output_text(rollout.output), trace=to_json_text(rollout.trace),
            tool_calls=to_json_text([c.model_dump() for c in rollout.tool_calls]),
            trajectory=rollout.trajectory, tokens=rollout.tokens, cost_usd=rollout.cost_usd,
        )
    if error is not None:
        row.update(reward=None, error=bounded(error), error_kind=str(error_kind))
    elif score is not None:
        row.update(reward=score.reward, feedback=score.feedback,
                   score_parts=to_json_text(score.parts) if score.parts else None)
    return row


def utc(timestamp: float) -> dt.datetime:
    """A POSIX timestamp as an aware UTC datetime."""
    return dt.datetime.fromtimestamp(timestamp, tz=dt.timezone.utc)
