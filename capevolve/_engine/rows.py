"""Worker outcomes, and the rows a scorer builds from them."""

from __future__ import annotations

import json
import math
from typing import Any

import pydantic_core
from pydantic import ValidationError

from capevolve._engine.contract import Outcome, RowBatch, ScoreJob
from capevolve.adapter import Rollout, ToolCall
from capevolve.kinds import ErrorKind, ModelFailure
from capevolve.models.meter import Meter

MAX_ERROR_CHARS = 2000
_KINDS = {str(kind) for kind in ErrorKind}


_CANONICAL = json.JSONEncoder(sort_keys=True, ensure_ascii=False, default=repr,
                              allow_nan=False)
_TEXT_OF_STR = json.encoder.encode_basestring  # what _CANONICAL writes for a str


def _finite(value: Any) -> Any:
    """``value`` with non-finite floats as their repr."""
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def to_json_text(value: Any) -> str | None:
    """Canonical JSON of ``value`` (None stays None); unwritable values become their repr."""
    if value is None:
        return None
    kind = type(value)  # scalars as _CANONICAL writes them, without building an encoder
    if kind is str:
        return _TEXT_OF_STR(value)
    if kind is int:
        return int.__repr__(value)
    if kind is float and math.isfinite(value):
        return float.__repr__(value)
    try:
        return _CANONICAL.encode(value)
    except ValueError:  # a NaN or an infinity somewhere inside
        return _CANONICAL.encode(_finite(value))


def output_text(value: Any) -> str | None:
    """Strings as they are, anything else as JSON."""
    return value if isinstance(value, str) or value is None else to_json_text(value)


def bounded(message: str) -> str:
    """``message`` cut to MAX_ERROR_CHARS."""
    return message if len(message) <= MAX_ERROR_CHARS else message[:MAX_ERROR_CHARS] + " [...]"


def rollout_json(rollout: Rollout) -> tuple[str, str | None]:
    """A Rollout as JSON, unwritable fields reset and named as the problem."""
    if _plain(rollout):
        try:
            return _WIRE.to_json(rollout, warnings=False, fallback=repr).decode(), None
        except Exception:  # noqa: BLE001 - a value that cannot be written: named below
            pass
    data = rollout.model_dump(warnings=False)
    problems: list[str] = []
    for _ in range(len(data) + 1):
        try:
            return _dump(data), "; ".join(problems) or None
        except Exception:  # noqa: BLE001 - find the field that cannot be written
            name = next((k for k, v in data.items() if not _writable(v)), None)
            if name is None:
                break
            problems.append(f"invalid value in Rollout.{name}: a lone surrogate or another "
                            "value not encodable as UTF-8 JSON")
            data[name] = Rollout.model_fields[name].get_default(call_default_factory=True) \
                if name in Rollout.model_fields else None
    raise ValueError("run_target returned a Rollout that cannot be written as JSON")


_WIRE = pydantic_core.SchemaSerializer(Rollout.__pydantic_core_schema__,
                                       {"ser_json_inf_nan": "constants"})
"""Rollout's serializer, keeping NaN and infinities inside ``Any`` fields."""
_OPTIONAL_INT, _OPTIONAL_STR, _OPTIONAL_BOOL = (int, type(None)), (str, type(None)), \
    (bool, type(None))


def _plain(rollout: Rollout) -> bool:
    """True when :data:`_WIRE` writes what the field-by-field path would: exact field types,
    which ``model_construct`` can break."""
    cost = rollout.cost_usd
    if type(rollout) is not Rollout or not (
            cost is None or (type(cost) is float and math.isfinite(cost))) \
            or type(rollout.tokens) not in _OPTIONAL_INT \
            or type(rollout.error) not in _OPTIONAL_STR \
            or type(rollout.trajectory) not in _OPTIONAL_STR \
            or type(rollout.transient) is not bool or type(rollout.tool_calls) is not list:
        return False
    return all(type(call) is ToolCall and type(call.name) is str
               and type(call.mutates) in _OPTIONAL_BOOL for call in rollout.tool_calls)


def _dump(data: Any) -> str:
    return pydantic_core.to_json(data, inf_nan_mode="constants", fallback=repr).decode()


def _writable(value: Any) -> bool:
    try:
        _dump(value)
    except Exception:  # noqa: BLE001 - any failure means: not writable
        return False
    return True


def parse_rollout(raw: Outcome) -> tuple[Rollout | None, str | None]:
    """The rollout, invalid fields dropped and named; ValueError when unusable."""
    text = raw.get("rollout")
    if text is None:
        return None, None
    if not isinstance(text, str):
        raise ValueError(f"rollout is {type(text).__name__}, not JSON text")
    try:
        return Rollout.model_validate_json(text), None
    except ValidationError:
        pass
    try:
        data = json.loads(text)
    except ValueError:
        raise ValueError("rollout is not JSON text") from None
    if not isinstance(data, dict):
        raise ValueError(f"rollout is a JSON {type(data).__name__}, not an object")
    problems: list[str] = []
    for _ in range(len(data) + 1):
        try:
            return Rollout.model_validate(data), "; ".join(problems) or None
        except ValidationError as exc:
            first = exc.errors()[0]
            if not first["loc"] or first["loc"][0] not in data:
                raise ValueError(f"rollout does not validate: {first['msg']}") from None
            where = ".".join(str(part) for part in first["loc"])
            shown = repr(first.get("input"))[:60]
            problems.append(f"invalid value in Rollout.{where}: {shown}: {first['msg']}")
            del data[first["loc"][0]]
    raise ValueError("rollout does not validate")


def outcome(task_id: str, trial: int, *, attempts: int, latency_s: float, started: float,
            finished: float, worker_id: str, node_id: str, rollout: str | None = None,
            error: str | None = None, error_kind: ErrorKind | None = None,
            usage: dict[str, Any] | None = None) -> Outcome:
    """A worker's report on one unit."""
    return {"task_id": task_id, "trial": trial, "attempts": attempts, "latency_s": latency_s,
            "started": started, "finished": finished, "worker_id": worker_id,
            "node_id": node_id, "rollout": rollout,
            "error": None if error is None else bounded(error),
            "error_kind": None if error_kind is None else str(error_kind), "usage": usage}


def _number(value: Any, default: float) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok else default


PER_ROW = ("task_id", "trial", "seed", "reward", "feedback", "score_parts", "output",
           "inputs", "tool_calls", "trace", "trajectory", "error", "error_kind", "attempts",
           "latency_s", "tokens", "cost_usd", "worker_id", "node_id", "started_at",
           "finished_at", "model", "usage", "unknown_attempts", "judge_tokens",
           "judge_cost_usd", "model_failure")
"""Per-row columns; the rest come from the job."""


def row_batch(job: ScoreJob, rows: list[tuple], now: float) -> RowBatch:
    """``(task_id, trial, seed, inputs, outcome, rollout, score, error, error_kind, judge
    meter)`` rows as a :class:`RowBatch`: keys from the trusted job and unit, worker values
    type-checked, reward only from ``score`` and null on error."""
    keys = {name: str(getattr(job, name)) for name in  # plain str (a Split is a StrEnum)
            ("run_id", "eval_id", "split", "candidate_id", "candidate_hash")}
    (task_ids, trials, seeds, inputs, raws, rollouts, scores, errors,
     kinds, judges) = map(list, zip(*rows, strict=True)) if rows else ([],) * 10
    scores = [None if e is not None else s for s, e in zip(scores, errors, strict=True)]
    attempts = [raw.get("attempts") for raw in raws]
    columns: dict[str, Any] = {
        "task_id": task_ids, "trial": trials, "seed": seeds, "inputs": inputs,
        "reward": [None if s is None else s.reward for s in scores],
        "feedback": [None if s is None else s.feedback for s in scores],
        "score_parts": [to_json_text(s.parts) if s is not None and s.parts else None
                        for s in scores],
        "output": [None if r is None else output_text(r.output) for r in rollouts],
        "trace": [None if r is None else to_json_text(r.trace) for r in rollouts],
        "tool_calls": [None if r is None else _calls_text(r) for r in rollouts],
        "trajectory": [None if r is None else r.trajectory for r in rollouts],
        **_usage_columns(raws, rollouts),
        "judge_tokens": [None if j is None else j.tokens for j in judges],
        "judge_cost_usd": [None if j is None else j.cost_usd for j in judges],
        "error": [None if e is None else bounded(e) for e in errors],
        "error_kind": [None if e is None else str(k)
                       for e, k in zip(errors, kinds, strict=True)],
        "attempts": [a if type(a) is int and a >= 0 else 0 for a in attempts],
        "latency_s": [max(0.0, _number(raw.get("latency_s"), 0.0)) for raw in raws],
        "started_at": [_number(raw.get("started"), now) for raw in raws],
        "finished_at": [_number(raw.get("finished"), now) for raw in raws],
        "worker_id": [_text(raw.get("worker_id")) for raw in raws],
        "node_id": [_text(raw.get("node_id")) for raw in raws],
    }
    return RowBatch({"schema_version": job.schema_version, **keys,
                     "model_settings": job.agent_model,
                     **{name: columns[name] for name in PER_ROW}}, len(rows))


_FAILURES = {str(kind) for kind in ModelFailure}


def _usage_columns(raws: list[Outcome], rollouts: list[Rollout | None]) -> dict[str, list]:
    """Token, cost and model columns, from the model meter if it counted calls, else the
    adapter's; unknown stays None, never 0."""
    out: dict[str, list] = {k: [] for k in ("tokens", "cost_usd", "model", "usage",
                                            "unknown_attempts", "model_failure")}
    for raw, r in zip(raws, rollouts, strict=True):
        meter = Meter()
        meter.merge(raw.get("usage"))  # untrusted: only well-formed counts are taken
        counted = meter.counts["attempts"] > 0
        all_unknown = meter.counts["unknown_attempts"] == meter.counts["attempts"]
        if counted:  # a lower bound when some attempts are unknown (their count is stored)
            out["tokens"].append(None if all_unknown else meter.tokens)
        else:
            out["tokens"].append(None if r is None else r.tokens)
        out["cost_usd"].append(meter.cost_usd if counted else None if r is None
                               else r.cost_usd)
        out["model"].append(",".join(sorted(meter.models)) or None)
        out["usage"].append(to_json_text(meter.snapshot()) if raw.get("usage") else None)
        out["unknown_attempts"].append(meter.counts["unknown_attempts"] if counted else None)
        out["model_failure"].append(meter.failure if meter.failure in _FAILURES
                                    and raw.get("error") is not None else None)
    return out


def _calls_text(rollout: Rollout) -> str | None:
    calls = rollout.tool_calls
    return to_json_text([t.model_dump() for t in calls]) if calls else "[]"


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def reported_error(raw: Outcome) -> tuple[str, ErrorKind] | None:
    """The worker's error and kind, or None."""
    error, kind = raw.get("error"), raw.get("error_kind")
    if error is None and kind is None:
        return None
    if not isinstance(error, str) or kind not in _KINDS or kind == ErrorKind.SCORE:
        return f"worker reported a malformed error ({error!r}, {kind!r})", ErrorKind.EXCEPTION
    return error, ErrorKind(kind)


