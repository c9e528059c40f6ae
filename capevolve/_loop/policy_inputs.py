"""What the decision policies read from a run: the goal's metric (a missing part is missing,
never 0), outputs, targets.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from typing import Any

import numpy as np

from capevolve._policy.gate.outcomes import SideOutcomes
from capevolve._store import censuses, jsonfiles
from capevolve._store.rollouts.confine import sql_literal
from capevolve._store.rollouts.query import RolloutStore
from capevolve._store.rollouts.task_rows import TaskRows, task_rows
from capevolve._store.rundir import RunDir
from capevolve.config import GoalConfig
from capevolve.errors import GateError
from capevolve.kinds import GoalDirection, Split


def goal_sides(store: RolloutStore, eval_id: str, goal: GoalConfig, *,
               below_trial: int | None = None) -> SideOutcomes:
    """One evaluation's per-task values of the goal's metric, negated under ``minimize`` so a
    positive delta is toward the goal; with ``below_trial``, earlier trials only."""
    sign = -1.0 if goal.direction == GoalDirection.MINIMIZE else 1.0
    if goal.metric == "reward" and below_trial is None:  # one grouped read, cached
        rows = task_rows(store.layout, eval_id)
        return SideOutcomes.from_columns(rows.tasks, rows.offsets, rows.reward, sign)
    trials = "" if below_trial is None else f" AND trial < {int(below_trial)}"
    _, found = store.query(
        f"SELECT task_id, trial, reward, score_parts FROM rollouts "
        f"WHERE eval_id = {sql_literal(eval_id)}{trials} ORDER BY task_id, trial", eval_id)
    rewards: dict[str, list[float]] = defaultdict(list)
    for task_id, _trial, reward, parts in found:
        rewards[task_id]  # noqa: B018 -- run but unscored is an empty list
        value = None if reward is None else _value(reward, parts, goal.metric)
        if value is not None:
            rewards[task_id].append(value)
    return SideOutcomes.from_rewards({t: [sign * v for v in vs] for t, vs in rewards.items()})


def trial_means(store: RolloutStore, eval_id: str, metric: str) -> dict[int, float]:
    """Trial index -> mean of ``metric`` over that trial's valid rows (no direction)."""
    _, rows = store.query(
        f"SELECT trial, reward, score_parts FROM rollouts WHERE eval_id = "
        f"{sql_literal(eval_id)} AND reward IS NOT NULL ORDER BY trial, task_id", eval_id)
    values: dict[int, list[float]] = defaultdict(list)
    for trial, reward, parts in rows:
        value = _value(reward, parts, metric)
        if value is not None:
            values[int(trial)].append(value)
    return {k: math.fsum(v) / len(v) for k, v in sorted(values.items())}


def _value(reward: Any, parts: str | None, metric: str) -> float | None:
    """A row's value of ``metric``: its reward, or a score part (None: missing)."""
    if metric == "reward":
        return float(reward)
    try:
        value = json.loads(parts or "{}").get(metric.split(".", 1)[1])
    except (ValueError, AttributeError):
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def outputs_changed(store: RolloutStore, cand_eval: str, best_eval: str) -> dict[str, bool]:
    """Task -> whether its stored outputs differ between the two evaluations."""
    cand, best = (_outputs(task_rows(store.layout, e)) for e in (cand_eval, best_eval))
    return {t: cand[t] != best[t] for t in cand.keys() & best.keys()}


def outputs_vary(store: RolloutStore, cand_eval: str, best_eval: str) -> dict[str, bool]:
    """Task -> whether its outputs vary between trials (False: each side gave one output on 2+
    scored trials; absent: not measured)."""
    sides = [task_rows(store.layout, e) for e in (cand_eval, best_eval)]
    outputs = [_outputs(rows) for rows in sides]
    scored = [dict(zip(rows.tasks, np.diff(rows.offsets).tolist(), strict=True))
              for rows in sides]
    found: dict[str, bool] = {}
    for task in outputs[0].keys() & outputs[1].keys():
        if any("," in side[task] for side in outputs):  # more than one distinct digest
            found[task] = True
        elif all(side[task] >= 2 for side in scored):
            found[task] = False
    return found


def _outputs(rows: TaskRows) -> dict[str, str]:
    """Task -> its distinct output digests (one string)."""
    return {t: o for t, o in zip(rows.tasks, rows.outputs, strict=True) if o is not None}


def _cluster_targets(run: RunDir, split: Split = Split.VAL) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    folder = run.layout.diagnoses
    for path in sorted(folder.glob(f"{split}__*.json")) if folder.is_dir() else []:
        doc: Any = jsonfiles.read(path)
        for cluster in doc.get("clusters", []) if isinstance(doc, dict) else []:
            if isinstance(cluster, dict) and isinstance(cluster.get("signature"), str):
                found.setdefault(cluster["signature"], sorted(map(str, cluster.get("tasks", []))))
    return found


def target_tasks(run: RunDir, target: str, split: Split = Split.VAL,
                 option: str = "--target") -> list[str]:
    """The ``split`` task ids of census bucket or diagnose cluster ``target`` (else GateError,
    naming ``option``)."""
    census, clusters = censuses.bucket_tasks(run.root), _cluster_targets(run, split)
    tasks = census.get(target, clusters.get(target))
    if tasks is None:
        known = sorted(census) + sorted(clusters)
        raise GateError(f"{option} {target!r}: not a recorded census bucket (census check "
                        f"--record) nor a {split} diagnose cluster signature; known: "
                        f"{', '.join(known[:20]) or 'none'}")
    ids = set(run.splits.ids(split))
    return [t for t in tasks if t in ids]
