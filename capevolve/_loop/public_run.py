"""The public, read-only view of a run; only the verbs change a run."""

from __future__ import annotations

from pathlib import Path

from capevolve._store.evals import all_evals
from capevolve._store.rundir import RunDir as StoreRunDir
from capevolve._store.splits import Splits
from capevolve.kinds import EventKind, Split
from capevolve.records import CandidateRecord, EvalRecord, Event, RunManifest, Spent


class RunDir:
    """A run directory, read-only (open with :meth:`open` or ``capevolve.open_run``)."""

    __slots__ = ("_run",)

    def __init__(self, run: StoreRunDir | Path | str) -> None:
        """The run at path ``run`` (as :meth:`open`), or an internal one."""
        self._run = run if isinstance(run, StoreRunDir) else StoreRunDir.open(Path(run))

    @classmethod
    def open(cls, root: Path | str) -> RunDir:
        """Open and verify the run at ``root`` (RunDirError if not intact); modifies nothing."""
        return cls(Path(root))

    def __repr__(self) -> str:
        return f"RunDir({str(self.root)!r})"

    @property
    def root(self) -> Path:
        """The run directory."""
        return self._run.root

    @property
    def run_id(self) -> str:
        return self._run.run_id

    @property
    def manifest(self) -> RunManifest:
        """run.json: the config snapshot, versions, seed, task count."""
        return self._run.manifest

    @property
    def splits(self) -> Splits:
        """The frozen train / val / test task ids."""
        return self._run.splits

    @property
    def best_id(self) -> str:
        """The current best candidate."""
        return self._run.best_id

    @property
    def spent(self) -> Spent:
        """Everything spent so far."""
        return Spent.model_validate(self._run.spent.to_dict())

    @property
    def finalized(self) -> bool:
        """True once finalize wrote final.json (the run is closed)."""
        return self._run.finalized()

    def events(self, kind: EventKind | str | None = None) -> list[Event]:
        """The log's events (optionally of one kind), in order."""
        return self._run.events(kind)

    def candidate_ids(self) -> list[str]:
        """Every snapshotted candidate, sorted."""
        return self._run.candidate_ids()

    def candidate(self, candidate_id: str) -> CandidateRecord:
        """A candidate's record (CandidateError for an unknown id)."""
        return self._run.candidate_meta(candidate_id)

    def candidate_dir(self, candidate_id: str) -> Path:
        """A candidate's snapshot files, hash-checked (copy them to edit)."""
        return self._run.candidate_dir(candidate_id)

    def evaluations(self, split: Split | str | None = None) -> list[EvalRecord]:
        """Every evaluation record (optionally of one split), in start order."""
        return [r for r in all_evals(self._run) if split is None or r.split == split]


def store_run(run: RunDir) -> StoreRunDir:
    """The writer behind a public run, for the verbs."""
    return run._run
