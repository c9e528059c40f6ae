"""Outcomes and rows: what a worker reports for a unit, and the storage row built from it.

A worker (untrusted: it imports candidate code) reports an :data:`Outcome` made with
:func:`outcome`. A scorer (trusted) turns it into a row with :func:`build_row`: the key
columns come from the scorer's own job and the driver's unit, never from the worker, and
reward / feedback come only from the scorer's ``score`` call. A malformed outcome is an
error row, never a crash of the scorer.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from typing import Any

from pydantic import ValidationError

from capevolve._engine.contract import Outcome, ScoreJob
from capevolve.adapter import Rollout, Score, Task
from capevolve.kinds import ErrorKind

MAX_ERROR_CHARS = 2000
_KINDS = {str(kind) for kind in ErrorKind}


_CANONICAL = json.JSONEncoder(sort_keys=True, ensure_ascii=False, default=repr)


def to_json_text(value: Any) -> str | None:
    """Canonical JSON text of a value (None stays None; unserialisable values as repr)."""
    if value is None:
        return None
    return _CANONICAL.encode(value)


def output_text(value: Any) -> str | None:
    """The agent's output as text: strings as they are, anything else as JSON."""
    return value if isinstance(value, str) or value is None else to_json_text(value)


def bounded(message: str) -> str:
    """An error message cut to a bounded length."""
    return message if len(message) <= MAX_ERROR_CHARS else message[:MAX_ERROR_CHARS] + " [...]"


def rollout_json(rollout: Rollout) -> str:
    """A Rollout as JSON text for the trip to a scorer (values JSON cannot hold as repr)."""
    return rollout.model_dump_json(fallback=repr)


def outcome(task_id: str, trial: int, *, attempts: int, latency_s: float, started: float,
            finished: float, worker_id: str, node_id: str, rollout: str | None = None,
            error: str | None = None, error_kind: ErrorKind | None = None) -> Outcome:
    """A worker's report on one unit (plain JSON types only)."""
    return {"task_id": task_id, "trial": trial, "attempts": attempts, "latency_s": latency_s,
            "started": started, "finished": finished, "worker_id": worker_id,
            "node_id": node_id, "rollout": rollout,
            "error": None if error is None else bounded(error),
            "error_kind": None if error_kind is None else str(error_kind)}


def utc(timestamp: float) -> dt.datetime:
    """A POSIX timestamp as an aware UTC datetime."""
    return dt.datetime.fromtimestamp(timestamp, tz=dt.UTC)


def base_row(job: ScoreJob, task: Task, trial: int, seed: int,
             inputs: str | None = None) -> dict:
    """The key columns of a unit's row, from the trusted job and unit only (``inputs``:
    the task input's JSON text, when the caller has it already)."""
    return {
        "schema_version": job.schema_version, "run_id": job.run_id, "eval_id": job.eval_id,
        "split": job.split, "candidate_id": job.candidate_id,
        "candidate_hash": job.candidate_hash, "task_id": task.id, "trial": trial,
        "seed": seed, "inputs": inputs if inputs is not None else to_json_text(task.input),
    }


def _number(value: Any, default: float) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok else default


def measurements(raw: Outcome, now: float) -> dict:
    """The worker-reported columns, type-checked (bad values become defaults)."""
    attempts = raw.get("attempts")
    started, finished = _number(raw.get("started"), now), _number(raw.get("finished"), now)
    text = {k: raw.get(k) if isinstance(raw.get(k), str) else None
            for k in ("worker_id", "node_id")}
    return {"attempts": attempts if type(attempts) is int and attempts >= 0 else 0,
            "latency_s": max(0.0, _number(raw.get("latency_s"), 0.0)),
            "started_at": utc(started), "finished_at": utc(finished), **text}


def parse_rollout(raw: Outcome) -> Rollout | None:
    """The outcome's rollout; raises ValueError when the text is not a valid Rollout."""
    text = raw.get("rollout")
    if text is None:
        return None
    if not isinstance(text, str):
        raise ValueError(f"rollout is {type(text).__name__}, not JSON text")
    try:
        return Rollout.model_validate_json(text)
    except ValidationError as exc:
        raise ValueError(f"rollout does not validate: {exc.errors()[0]['msg']}") from None


def reported_error(raw: Outcome) -> tuple[str, ErrorKind] | None:
    """The worker's error and its kind, or None; a malformed error is a worker error."""
    error, kind = raw.get("error"), raw.get("error_kind")
    if error is None and kind is None:
        return None
    if not isinstance(error, str) or kind not in _KINDS or kind == ErrorKind.SCORE:
        return f"worker reported a malformed error ({error!r}, {kind!r})", ErrorKind.EXCEPTION
    return error, ErrorKind(kind)


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
