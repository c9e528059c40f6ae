"""Builders for diagnose tests: Trial records in memory, and run dirs with exact Parquet rows."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from fixtures.projects import make_project

from capevolve._loop.run import create_run
from capevolve._store.rollouts.writer import write_part
from capevolve._store.rundir import RunDir
from capevolve.diagnose.context import AdapterContext
from capevolve.diagnose.diagnosis import DiagnoseOptions, build_diagnosis
from capevolve.diagnose.source import Trial

READ_CALLS = [{"name": "get_order", "arguments": {"order_id": "1"}, "mutates": None}]
WRITE_CALLS = [{"name": "cancel_order", "arguments": {"order_id": "1"}, "mutates": None}]


def trial(task_id: str, reward: float | None = 0.0, feedback: str = "", *, n: int = 0,
          output: str = "", tool_calls: list | None = None, trace: Any = None,
          score_parts: dict | None = None, eval_id: str = "val__seed__k1") -> Trial:
    """One in-memory trial row."""
    return Trial(eval_id, task_id, n, reward, feedback,
                 json.dumps(score_parts) if score_parts else None, output, json.dumps("do it"),
                 json.dumps(tool_calls) if tool_calls is not None else None,
                 json.dumps(trace) if trace is not None else None, None,
                 "boom" if reward is None else None, "adapter" if reward is None else None)


def build(trials: list[Trial], targets: dict | None = None, **options: Any) -> dict:
    """build_diagnosis over in-memory trials (no adapter, no disk)."""
    context = AdapterContext(targets=targets, unavailable=None if targets else "no adapter")
    return build_diagnosis(trials, context, DiagnoseOptions(split="val", tag="seed", **options),
                           "rollouts/split=val/candidate=seed")


def make_run(tmp_path: Path, n_tasks: int = 40, tasks: list[dict] | None = None) -> RunDir:
    """A real run dir of the flex project (no rollouts yet)."""
    project = make_project(tmp_path / "project", tasks or n_tasks, trials=1)
    return create_run(project, tmp_path / "run")


def write_rows(run: RunDir, specs: list[dict], *, split: str = "val", candidate: str = "seed",
               eval_id: str | None = None, part: int = 0) -> Path:
    """Write rows (task_id, trial, reward, feedback, ... given per spec) as one Parquet part."""
    eval_id = eval_id or f"{split}__{candidate}__k1"
    t0 = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    rows = []
    for i, spec in enumerate(specs):
        spec = dict(spec)
        for name in ("tool_calls", "trace"):
            if name in spec and not isinstance(spec[name], str) and spec[name] is not None:
                spec[name] = json.dumps(spec[name])
        rows.append({
            "schema_version": 1, "run_id": run.run_id, "eval_id": eval_id, "split": split,
            "candidate_id": candidate, "candidate_hash": "h", "trial": 0, "seed": i,
            "attempts": 1, "inputs": json.dumps(f"do {spec['task_id']}"), "output": "",
            "finished_at": t0 + dt.timedelta(seconds=i + part * 100000), **spec})
    path = run.layout.partition(split, candidate) / f"{eval_id}-x-{part:05d}.parquet"
    written = write_part(rows, path)
    run.record_part(written, len(rows))  # as the writer does: the run verifies on open
    return written


def signatures(result: dict) -> list[str]:
    """The cluster signatures of a diagnosis, in order."""
    return [c["signature"] for c in result["clusters"]]


def cluster_of(result: dict, task_id: str) -> str:
    """The signature of the cluster holding a task's first failure."""
    return next(e["cluster"] for e in result["reflective_dataset"] if e["task_id"] == task_id)
