"""Every path inside a run directory, owned by one object."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Layout:
    """Where each file of a run dir lives."""

    root: Path

    @property
    def run_json(self) -> Path:
        return self.root / "run.json"

    @property
    def splits_json(self) -> Path:
        return self.root / "splits.json"

    @property
    def events(self) -> Path:
        return self.root / "events.jsonl"

    @property
    def state(self) -> Path:
        return self.root / "state.json"

    @property
    def candidates(self) -> Path:
        return self.root / "candidates"

    @property
    def rollouts(self) -> Path:
        return self.root / "rollouts"

    @property
    def evals(self) -> Path:
        return self.root / "evals"

    @property
    def diagnoses(self) -> Path:
        return self.root / "diagnoses"

    @property
    def confirmations(self) -> Path:
        return self.root / "confirmations"

    @property
    def seal(self) -> Path:
        return self.root / "seal.json"

    @property
    def final(self) -> Path:
        return self.root / "final.json"

    @property
    def report_md(self) -> Path:
        return self.root / "report.md"

    def candidate_files(self, candidate_id: str) -> Path:
        """A candidate's snapshotted files."""
        return self.candidates / candidate_id / "files"

    def candidate_meta(self, candidate_id: str) -> Path:
        return self.candidates / candidate_id / "candidate.json"

    def eval_json(self, eval_id: str) -> Path:
        return self.evals / f"{eval_id}.json"

    def partition(self, split: str, candidate_id: str) -> Path:
        """One split and candidate's partition."""
        return self.rollouts / f"split={split}" / f"candidate={candidate_id}"

    @property
    def lock(self) -> Path:
        """The writer lock's file; it stays between holders."""
        return self.root / "lock"

    @property
    def seal_lock(self) -> Path:
        """Held while the seal is created or judged."""
        return self.root / "seal.lock"

    def seal_aborted(self, stamp: str) -> Path:
        """Where a dead finalize's seal is set aside."""
        return self.root / f"seal.aborted-{stamp}.json"

    def split_rollouts(self, split: str) -> Path:
        """One split's partition."""
        return self.rollouts / f"split={split}"

    @property
    def journal(self) -> Path:
        """Evaluation sessions' dispatch and row journals."""
        return self.root / "journal"

    def quarantine(self) -> Path:
        return self.root / "quarantine"
