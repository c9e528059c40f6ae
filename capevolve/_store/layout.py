"""Every path inside a run directory, owned by one object."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Layout:
    """Where each file of a run dir lives (docs/storage.md lists them)."""

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
        """The immutable snapshot of a candidate's capability files."""
        return self.candidates / candidate_id / "files"

    def candidate_meta(self, candidate_id: str) -> Path:
        return self.candidates / candidate_id / "candidate.json"

    def eval_json(self, eval_id: str) -> Path:
        return self.evals / f"{eval_id}.json"

    def partition(self, split: str, candidate_id: str) -> Path:
        """Hive partition directory of one split and candidate."""
        return self.rollouts / f"split={split}" / f"candidate={candidate_id}"

    @property
    def lock(self) -> Path:
        """The run's writer lock (flock; the file stays between holders)."""
        return self.root / "lock"

    @property
    def seal_lock(self) -> Path:
        """Held by whoever creates or judges the seal (milliseconds)."""
        return self.root / "seal.lock"

    def seal_aborted(self, stamp: str) -> Path:
        """Where a dead finalize's seal is set aside."""
        return self.root / f"seal.aborted-{stamp}.json"

    def split_rollouts(self, split: str) -> Path:
        """Hive partition directory of one split (every candidate)."""
        return self.rollouts / f"split={split}"

    @property
    def journal(self) -> Path:
        """Dispatch and finished-row journals of evaluations (capevolve._store.journal)."""
        return self.root / "journal"

    def quarantine(self) -> Path:
        return self.root / "quarantine"
