"""Refuse a candidate whose files carry what they never may (:mod:`capevolve._policy.leaks`)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from capevolve._policy.leaks import Needles, leaves, scan, tokens
from capevolve._project.tasks import iter_tasks
from capevolve._store.candidates import pack
from capevolve._store.rundir import RunDir
from capevolve.config import ProjectConfig
from capevolve.errors import CandidateError
from capevolve.kinds import SEED_ID, Decision, EventKind, Split


def refuse_leaks(run: RunDir, config: ProjectConfig, candidate_id: str, adapter: Any) -> None:
    """CandidateError (after an indecisive gate) when the candidate carries a task id, a val /
    test gold value (not one many tasks share) or a long span of a val / test input."""
    if candidate_id == SEED_ID:
        return
    rules = config.leak_scan
    needles = Needles(rules.min_chars, rules.ignore)
    held_out = {**{t: "val" for t in run.splits.ids(Split.VAL)},
                **{t: "test" for t in run.splits.ids(Split.TEST)}}
    inputs: list[str] = []
    for split in Split:
        for task_id in run.splits.ids(split):
            needles.add(task_id, "task id")
    shared: Counter[tuple[str, ...]] = Counter()  # how many tasks have each gold value
    values: list[tuple[str, str]] = []
    for task in iter_tasks(adapter):
        mine = {tokens(v): v for v in leaves(task.target)}
        shared.update(mine.keys())
        split_of = held_out.get(task.id)
        if split_of is not None:
            values += [(v, split_of) for v in mine.values()]
            inputs += list(leaves(task.input))
    for value, split_of in values:  # a value many tasks share is a label, not an answer
        if rules.gold_values and shared[tokens(value)] <= rules.max_tasks_per_value:
            needles.add(value, f"gold value of a {split_of} task")
    found = scan(pack(run.candidate_dir(candidate_id)), needles, inputs,
                 rules.input_span_chars)
    if not found:
        return
    where = [leak.text() for leak in found]
    run.record(EventKind.GATE, candidate_id=candidate_id, best_id=run.best_id,
               decision=Decision.INDECISIVE,
               reasons=[f"leak: {w} (a candidate may not carry it)" for w in where])
    raise CandidateError(f"candidate {candidate_id!r} carries what it must not: "
                         f"{'; '.join(where[:5])}{' ...' if len(where) > 5 else ''}; "
                         "refused before any rollout (values are never shown)")
