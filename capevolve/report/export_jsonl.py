"""One JSON line per datapoint of an evaluation, sorted by id: input snippet, output,
justification, parts, mean ``score`` and counts; an excluded datapoint carries ``excluded``."""

from __future__ import annotations

import json
from itertools import groupby
from pathlib import Path
from typing import Any

from capevolve._store.evals import load_eval
from capevolve._store.jsonfiles import write_bytes_atomic
from capevolve._store.rollouts.confine import sql_literal
from capevolve._store.rollouts.query import RolloutStore
from capevolve._store.rundir import RunDir
from capevolve.errors import RunDirError
from capevolve.kinds import Split

INPUT_SNIPPET = 200


def _json(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


def _snippet(text: str | None) -> str | None:
    if text is None:
        return None
    value = _json(text)
    flat = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return flat if len(flat) <= INPUT_SNIPPET else flat[:INPUT_SNIPPET - 3] + "..."


def write_export(run_dir: Path, eval_id: str,
                 out: Path | None) -> tuple[Path, list[dict[str, Any]]]:
    """Write the export to ``out`` (default <run_dir>/exports/<eval_id>.jsonl) atomically;
    returns the path and the lines. RunDirError for an unknown or a test-split evaluation."""
    lines = _lines(RunDir.open(run_dir), eval_id)
    path = out or run_dir / "exports" / f"{eval_id}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(path, "".join(json.dumps(line, ensure_ascii=False) + "\n"
                                     for line in lines).encode("utf-8"), sync=False)
    return path, lines


def _lines(run: RunDir, eval_id: str) -> list[dict[str, Any]]:
    record = load_eval(run, eval_id)
    if record.split == Split.TEST:
        raise RunDirError(f"--eval {eval_id}: test-split evaluations are never exported "
                          "(the held-out outputs stay in the run dir)")
    _, rows = RolloutStore(run.layout).query(
        "SELECT task_id, trial, reward, feedback, score_parts, output, inputs, error "
        f"FROM rollouts WHERE eval_id = {sql_literal(eval_id)} "
        "ORDER BY task_id, reward IS NULL, trial", eval_id)
    lines: dict[str, dict[str, Any]] = {}
    for task_id, group in groupby(rows, key=lambda row: row[0]):  # rows come by task
        trials = list(group)
        first = trials[0]
        rewards = [r[2] for r in trials if r[2] is not None]
        errors = [r[7] for r in trials if r[2] is None]
        line = {"id": task_id, "input": _snippet(first[6]), "output": _json(first[5]),
                "score": sum(rewards) / len(rewards) if rewards else None,
                "justification": first[3], "parts": _json(first[4]) or {},
                "trials": len(trials), "errors": len(errors)}
        if errors:
            line["error"] = errors[0]
        lines[task_id] = line
    for task_id, reason in record.excluded_tasks.items():
        lines[task_id] = {"id": task_id, "input": None, "output": None, "score": None,
                          "justification": None, "parts": {}, "trials": 0, "errors": 0,
                          "excluded": reason}
    return [lines[task_id] for task_id in sorted(lines)]
