"""The viewer's data: JSON-ready views of one run's stored files."""

from __future__ import annotations

import json
from contextlib import suppress
from pathlib import Path
from typing import Any

from capevolve._loop.status import run_status
from capevolve._store.documents import read_diagnosis
from capevolve._store.evals import all_evals
from capevolve._store.rollouts.confine import sql_literal
from capevolve._store.rollouts.query import RolloutStore, part_files
from capevolve._store.rundir import RunDir
from capevolve.errors import RunDirError
from capevolve.kinds import EvalStatus
from capevolve.report.lineage import decisions as candidate_decisions

LIST_COLUMNS = ("eval_id", "split", "candidate_id", "task_id", "trial", "reward",
                "error_kind", "latency_s", "tokens", "cost_usd", "worker_id", "node_id")
DETAIL_JSON_COLUMNS = ("inputs", "tool_calls", "trace", "score_parts")
OUTCOMES = ("passed", "failed", "errored")
MAX_ROWS = 2000


def _running_rows(run: RunDir, eval_id: str) -> int:
    if not part_files(run.layout, eval_id):
        return 0
    _, rows = RolloutStore(run.layout).query(
        f"SELECT count(*) FROM rollouts WHERE eval_id = {sql_literal(eval_id)}", eval_id)
    return int(rows[0][0])


def overview(run: RunDir) -> dict[str, Any]:
    """Status, candidates with decisions, evaluations and the tail of the event log."""
    status = run_status(run)
    decisions = candidate_decisions(run)
    metas = sorted((run.candidate_meta(cid) for cid in run.candidate_ids()),
                   key=lambda m: (m.role != "seed", m.created_at, m.id))
    candidates = [{"id": m.id, "role": m.role, "note": m.note, "created_at": m.created_at,
                   "hash": m.hash[:12], "parent": getattr(m, "parent", None),
                   "files": len(m.files), "best": m.id == run.best_id,
                   **decisions.get(m.id, {})} for m in metas]
    evaluations = []
    for record in all_evals(run):
        item = {k: v for k, v in record.to_json().items() if k not in ("task_means", "clusters")}
        if record.status == EvalStatus.RUNNING:
            item["rows_on_disk"] = _running_rows(run, record.eval_id)
        evaluations.append(item)
    events = run.events()
    return {"status": status, "candidates": candidates, "evaluations": evaluations,
            "n_events": len(events),
            "recent_events": [e.to_json() for e in events[-15:]][::-1]}


def cluster_tasks(run: RunDir, split: str, candidate_id: str, signature: str) -> set[str]:
    """Tasks of one cluster of the stored diagnosis (RunDirError if absent)."""
    path = run.layout.diagnoses / f"{split}__{candidate_id}.json"
    if not path.is_file():
        raise RunDirError(f"candidate {candidate_id} has no diagnosis on {split}")
    for cluster in read_diagnosis(path).clusters:
        if str(cluster.get("signature")) == signature:
            return {str(t) for t in cluster.get("tasks") or []}
    raise RunDirError(f"no cluster {signature!r} in the {split} diagnosis of {candidate_id}")


def clusters(run: RunDir, split: str, candidate_id: str) -> list[dict[str, Any]]:
    """The clusters of the stored diagnosis on ``split`` (empty when none)."""
    path = run.layout.diagnoses / f"{split}__{candidate_id}.json"
    if not path.is_file():
        return []
    return [{"signature": c.get("signature"), "size": c.get("size"),
             "tasks": c.get("tasks"), "score_lost": c.get("score_lost")}
            for c in read_diagnosis(path).clusters]


def trials(run: RunDir, *, split: str | None = None, candidate: str | None = None,
           eval_id: str | None = None, task: str | None = None, outcome: str | None = None,
           cluster: str | None = None, pass_threshold: float = 1.0) -> dict[str, Any]:
    """Stored rows matching every given filter; at most ``MAX_ROWS`` (``truncated`` if more)."""
    where = [f"{column} = {sql_literal(value)}" for column, value in (
        ("split", split), ("candidate_id", candidate), ("eval_id", eval_id), ("task_id", task))
        if value]
    if outcome:
        if outcome not in OUTCOMES:
            raise RunDirError(f"outcome {outcome!r}: expected one of {', '.join(OUTCOMES)}")
        where.append({"errored": "reward IS NULL",
                      "passed": f"reward >= {float(pass_threshold) - 1e-9!r}",
                      "failed": f"reward < {float(pass_threshold) - 1e-9!r}"}[outcome])
    if cluster:
        if not (split and candidate):
            raise RunDirError("a cluster filter needs a split and a candidate")
        ids = sorted(cluster_tasks(run, split, candidate, cluster))
        where.append(f"task_id IN ({', '.join(sql_literal(t) for t in ids) or 'NULL'})")
    sql = (f"SELECT {', '.join(LIST_COLUMNS)}, left(feedback, 160) AS feedback "
           f"FROM rollouts {'WHERE ' + ' AND '.join(where) if where else ''} "
           f"ORDER BY eval_id, task_id, trial LIMIT {MAX_ROWS + 1}")
    names, rows = RolloutStore(run.layout).query(sql, eval_id)
    items = [dict(zip(names, row, strict=True)) for row in rows]
    return {"rows": items[:MAX_ROWS], "truncated": len(items) > MAX_ROWS}


def trial(run: RunDir, eval_id: str, task_id: str, trial_no: int) -> dict[str, Any]:
    """One stored rollout in full, JSON columns decoded; RunDirError when absent."""
    names, rows = RolloutStore(run.layout).query(
        f"SELECT * FROM rollouts WHERE eval_id = {sql_literal(eval_id)} AND task_id = "
        f"{sql_literal(task_id)} AND trial = {int(trial_no)}", eval_id)
    if not rows:
        raise RunDirError(f"no stored rollout {eval_id} / {task_id} / trial {trial_no}")
    row = dict(zip(names, rows[0], strict=True))
    for column in DETAIL_JSON_COLUMNS:
        if isinstance(row.get(column), str):
            with suppress(ValueError):  # else shown as the stored text
                row[column] = json.loads(row[column])
    return {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in row.items()}


def run_file(run: RunDir, relative: str) -> Path:
    """A file of the run dir by relative path; RunDirError for anything resolving outside
    it (``..``, absolute paths, symlinks out) or not a file."""
    root = run.root.resolve()
    target = (root / relative).resolve()
    if not target.is_relative_to(root) or relative.startswith("/"):
        raise RunDirError(f"{relative!r}: outside the run dir")
    if not target.is_file():
        raise RunDirError(f"{relative!r}: no such file in the run dir")
    return target
