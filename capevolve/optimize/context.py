"""What a proposer is shown: the parent's train diagnosis (tried clusters marked), the
ledger, trajectory pointers and INSTRUCTIONS.md; never val rows beyond the ledger, never
test."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from capevolve._loop import evaluate as evaluating
from capevolve._store.evals import latest_complete_eval
from capevolve.diagnose.diagnosis import DiagnoseOptions, diagnose, diagnosis_path
from capevolve.diagnose.kinds import ClusterMode
from capevolve.errors import CapevolveError
from capevolve.kinds import Split
from capevolve.optimize.proposers.base import ProposalContext
from capevolve.optimize.session import TRAIN_TRIALS, Session
from capevolve.optimize.workdir import instructions_text, prepare


def train_diagnosis(s: Session, parent_id: str) -> tuple[dict[str, Any] | None, str | None]:
    """The parent's train diagnosis (made once), or None and why not."""
    path = diagnosis_path(s.run, str(Split.TRAIN), parent_id)
    record = latest_complete_eval(s.run, parent_id, Split.TRAIN,
                                             n_trials=TRAIN_TRIALS)
    try:
        if record is None:
            evaluating.evaluate(s.run, parent_id, Split.TRAIN, n_trials=TRAIN_TRIALS,
                                engine=s.engine)
        if not path.is_file():
            diagnose(s.run, DiagnoseOptions(split=str(Split.TRAIN), tag=parent_id,
                                            mode=ClusterMode.ROOT_CAUSE))
        return json.loads(path.read_text(encoding="utf-8")), None
    except (CapevolveError, OSError, ValueError) as exc:
        return None, f"no train diagnosis of {parent_id}: {exc}"


def mark_tried(diagnosis: dict[str, Any], s: Session, parent_id: str) -> dict[str, Any]:
    """Mark each cluster tried on this parent without an accept: ``tried_and_rejected``."""
    tried: dict[str, list[int]] = {}
    for r in s.ledger:
        if r.parent_id == parent_id and r.focus and r.outcome != "accept":
            tried.setdefault(r.focus, []).append(r.iteration)
    clusters = [{**c, "tried_and_rejected": tried[c.get("signature", "")]}
                if c.get("signature") in tried else c for c in diagnosis.get("clusters", [])]
    return {**diagnosis, "clusters": clusters}


def trajectories_text(s: Session, parent_id: str) -> str:
    partition = s.run.layout.partition(str(Split.TRAIN), parent_id)
    return (f"# Trajectories of {parent_id} on train\n\n"
            f"Parquet rows: `{partition}`\n\n"
            f"Query them: `capevolve query --run-dir {s.run.root} \"SELECT task_id, trial, "
            f"reward, feedback, trajectory FROM rollouts WHERE split = 'train' AND "
            f"candidate_id = '{parent_id}'\"`\n")


def build_context(s: Session, iteration: int, parent_id: str, focus: str | None,
                  diagnosis: dict[str, Any] | None) -> ProposalContext:
    """Prepare ``iteration``'s directory and its proposal's context."""
    if diagnosis is not None:
        diagnosis = mark_tried(diagnosis, s, parent_id)
    parent_dir = s.run.candidate_dir(parent_id)
    ledger = tuple(s.ledger)
    text = instructions_text(parent_id=parent_id, editable=s.config.capabilities,
                             protected=s.protected, stop_condition=s.config.stop_condition,
                             focus=focus, ledger=ledger, has_diagnosis=diagnosis is not None)
    workdir = prepare(s.files.work(iteration), parent_dir, instructions=text,
                      diagnosis=diagnosis, ledger=ledger,
                      trajectories=trajectories_text(s, parent_id))
    return ProposalContext(
        run_dir=Path(s.run.root), run_id=s.run.run_id, iteration=iteration,
        parent_id=parent_id, parent_dir=parent_dir, workdir=workdir,
        editable=tuple(s.config.capabilities), protected=s.protected,
        files=tuple(sorted(s.run.candidate_meta(parent_id).files)), diagnosis=diagnosis,
        ledger=ledger, instructions=text, stop_condition=s.config.stop_condition or "",
        focus=focus, seed=s.rng(iteration).getrandbits(31))
