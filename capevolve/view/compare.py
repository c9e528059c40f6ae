"""``compare A B``: the per-task paired table of two candidates on one split."""

from __future__ import annotations

from typing import Any

from capevolve._loop.frozen_config import run_config
from capevolve._policy.gate.thresholds import passes
from capevolve._store.documents import read_diagnosis
from capevolve._store.evals import latest_complete_eval
from capevolve._store.rollouts.task_rows import task_rows
from capevolve._store.rundir import RunDir
from capevolve.errors import RunDirError
from capevolve.kinds import Split
from capevolve.records import EvalRecord

FAIL_TO_PASS = "fail->pass"
PASS_TO_FAIL = "pass->fail"


def comparable_evals(run: RunDir, a: str, b: str, split: Split) -> tuple[EvalRecord, EvalRecord]:
    """The two evaluations a comparison pairs; RunDirError naming what is missing."""
    for cid in (a, b):
        run.candidate_meta(cid)  # RunDirError for an unknown candidate
    trials = run_config(run).num_trials
    found = {}
    for cid in (a, b):
        record = (latest_complete_eval(run, cid, split, n_trials=trials)
                  or latest_complete_eval(run, cid, split))
        if record is None:
            raise RunDirError(f"compare: candidate {cid} has no complete {split} evaluation;"
                              f" run `capevolve evaluate --candidate {cid} --split {split}`")
        found[cid] = record
    if found[a].n_trials != found[b].n_trials:
        raise RunDirError(f"compare: {found[a].eval_id} and {found[b].eval_id} have different "
                          "trial counts; evaluate both with the same --n-trials")
    return found[a], found[b]


def task_clusters(run: RunDir, split: Split, candidate_id: str) -> dict[str, list[str]] | None:
    """Task id -> its cluster signatures in the stored diagnosis (None when undiagnosed)."""
    path = run.layout.diagnoses / f"{split}__{candidate_id}.json"
    if not path.is_file():
        return None
    out: dict[str, list[str]] = {}
    for cluster in read_diagnosis(path).clusters:
        for task in cluster.get("tasks") or []:
            out.setdefault(str(task), []).append(str(cluster.get("signature")))
    return {task: sorted(set(sigs)) for task, sigs in out.items()}


def _side(rewards: list[float] | None, threshold: float) -> tuple[float | None, bool | None]:
    if not rewards:
        return None, None
    return sum(rewards) / len(rewards), all(passes(r, threshold) for r in rewards)


def compare(run: RunDir, a: str, b: str, split: Split | str = Split.VAL) -> dict[str, Any]:
    """The paired per-task table of ``a`` and ``b`` on train or val."""
    split = Split(split)
    if split == Split.TEST:
        raise RunDirError("compare: the test split is held out; finalize reports it once")
    eval_a, eval_b = comparable_evals(run, a, b, split)
    rewards_a = task_rows(run.layout, eval_a.eval_id).rewards()
    rewards_b = task_rows(run.layout, eval_b.eval_id).rewards()
    threshold = run_config(run).gate.pass_threshold
    clusters_a, clusters_b = task_clusters(run, split, a), task_clusters(run, split, b)
    rows: list[dict[str, Any]] = []
    for task in run.splits.ids(split):
        mean_a, pass_a = _side(rewards_a.get(task), threshold)
        mean_b, pass_b = _side(rewards_b.get(task), threshold)
        delta = None if mean_a is None or mean_b is None else mean_b - mean_a
        flip = None
        if pass_a is not None and pass_b is not None and pass_a != pass_b:
            flip = FAIL_TO_PASS if pass_b else PASS_TO_FAIL
        rows.append({
            "task_id": task, "mean_a": mean_a, "mean_b": mean_b, "delta": delta,
            "passed_a": pass_a, "passed_b": pass_b, "flip": flip,
            "trials_a": len(rewards_a.get(task) or []),
            "trials_b": len(rewards_b.get(task) or []),
            "clusters_a": None if clusters_a is None else clusters_a.get(task, []),
            "clusters_b": None if clusters_b is None else clusters_b.get(task, []),
        })
    deltas = [r["delta"] for r in rows if r["delta"] is not None]
    flips = {kind: [r["task_id"] for r in rows if r["flip"] == kind]
             for kind in (FAIL_TO_PASS, PASS_TO_FAIL)}
    return {
        "split": str(split), "a": a, "b": b, "eval_a": eval_a.eval_id,
        "eval_b": eval_b.eval_id, "n_trials": eval_a.n_trials, "pass_threshold": threshold,
        "mean_a": eval_a.mean, "mean_b": eval_b.mean,
        "mean_delta": sum(deltas) / len(deltas) if deltas else None,
        "paired_tasks": len(deltas), "n_tasks": len(rows),
        "improved": sum(1 for d in deltas if d > 0), "worsened": sum(1 for d in deltas if d < 0),
        "flips": flips, "diagnosed": clusters_a is not None and clusters_b is not None,
        "tasks": rows,
    }
