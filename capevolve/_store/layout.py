"""Every path inside a run directory, owned by one object."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


class _At:
    """A fixed path under the run dir, read as an attribute of a :class:`Layout`."""

    def __init__(self, *names: str) -> None:
        self.names = names

    def __get__(self, layout: Layout, owner: object = None) -> Path:
        return layout.root.joinpath(*self.names)


@dataclass(frozen=True)
class Layout:
    """Where each file of a run dir lives."""

    root: Path

    run_json = _At("run.json")
    splits_json = _At("splits.json")
    events = _At("events.jsonl")
    state = _At("state.json")
    candidates = _At("candidates")
    rollouts = _At("rollouts")
    evals = _At("evals")
    diagnoses = _At("diagnoses")
    confirmations = _At("confirmations")
    seal = _At("seal.json")
    final = _At("final.json")
    report_md = _At("report.md")
    lock = _At("lock")
    """The writer lock's file; it stays between holders."""
    seal_lock = _At("seal.lock")
    """Held while the seal is created or judged."""
    journal = _At("journal")
    """Evaluation sessions' dispatch and row journals."""

    def candidate_files(self, candidate_id: str) -> Path:
        """A candidate's snapshotted files."""
        return self.candidates / candidate_id / "files"

    def candidate_meta(self, candidate_id: str) -> Path:
        return self.candidates / candidate_id / "candidate.json"

    def eval_json(self, eval_id: str) -> Path:
        return self.evals / f"{eval_id}.json"

    def split_rollouts(self, split: str) -> Path:
        """One split's partition."""
        return self.rollouts / f"split={split}"

    def partition(self, split: str, candidate_id: str) -> Path:
        """One split and candidate's partition."""
        return self.split_rollouts(split) / f"candidate={candidate_id}"

    def seal_aborted(self, stamp: str) -> Path:
        """Where a dead finalize's seal is set aside."""
        return self.root / f"seal.aborted-{stamp}.json"

    def quarantine(self) -> Path:
        return self.root / "quarantine"
