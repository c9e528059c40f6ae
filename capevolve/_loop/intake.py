"""Candidate intake: snapshot a directory (or take an id) and verify it before paying.

Tampering with a protected file, or carrying a leak, is refused and recorded as an indecisive
gate: it is not evidence about quality.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from capevolve._policy.leaks import Needles, leaves, scan, tokens
from capevolve._policy.protect import protected_changes, protected_patterns
from capevolve._project.tasks import iter_tasks
from capevolve._store.candidates import content_hash, pack
from capevolve._store.rundir import CANDIDATE_ID, RunDir
from capevolve.config import ProjectConfig
from capevolve.errors import CandidateError
from capevolve.kinds import SEED_ID, Decision, EventKind, Split


def candidate_source(run: RunDir, candidate: str | Path) -> Path:
    """The directory ``candidate`` names; CandidateError if it is in the run dir or holds it."""
    text = str(candidate)
    try:
        path = Path(text).resolve(strict=True) if text else None
    except (OSError, RuntimeError):
        path = None
    if path is None or not path.is_dir():
        raise CandidateError(f"candidate {text!r}: neither a candidate id of this run "
                             "nor an existing directory")
    root = run.root.resolve()
    if path == root or root in path.parents:
        raise CandidateError(f"candidate {text!r}: {path} is inside the run dir; name a "
                             "snapshot by its id (seed, cand_001 ...)")
    if path in root.parents:
        raise CandidateError(f"candidate {text!r}: {path} holds the run dir; give the "
                             "capability directory itself")
    return path


def resolve_candidate(run: RunDir, candidate: str | Path) -> str:
    """A candidate id, or a directory to snapshot (identical content reuses a snapshot)."""
    text = str(candidate)
    if CANDIDATE_ID.match(text) and run.layout.candidate_meta(text).is_file():
        return text
    path = candidate_source(run, candidate)
    existing = run.find_candidate(content_hash(path))
    if existing:
        return existing
    return run.snapshot(run.next_candidate_id(), path).id


def refuse_tampering(run: RunDir, config: ProjectConfig, candidate_id: str) -> None:
    """CandidateError (after an indecisive gate) when a protected file differs from the seed's."""
    if candidate_id == SEED_ID:
        return
    patterns = protected_patterns(config.protected_paths)
    changed = protected_changes(run.candidate_meta(SEED_ID).files,
                                run.candidate_meta(candidate_id).files, patterns)
    if changed:
        run.record(EventKind.TAMPER, candidate_id=candidate_id, paths=changed)
        run.record(EventKind.GATE, candidate_id=candidate_id, best_id=run.best_id,
                    decision=Decision.INDECISIVE,
                    reasons=[f"tampering: protected paths changed: {', '.join(changed)}"])
        raise CandidateError(f"candidate {candidate_id!r} changes protected paths: "
                             f"{', '.join(changed[:10])}; refused before any rollout")


def refuse_leaks(run: RunDir, config: ProjectConfig, candidate_id: str, adapter: Any) -> None:
    """CandidateError (after an indecisive gate) when the candidate carries what it never may
    (:mod:`capevolve._policy.leaks`): a task id, a val / test gold value (not one many tasks
    share) or a long span of a val / test input."""
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
