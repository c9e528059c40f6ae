"""The public, read-only view of a run; only the verbs change a run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from capevolve._store.evals import all_evals
from capevolve._store.rundir import RunDir as StoreRunDir
from capevolve._store.splits import Splits
from capevolve.kinds import EventKind, Split
from capevolve.records import CandidateRecord, EvalRecord, Event, RunManifest, Spent


def _read(name: str, doc: str) -> Any:
    """A read-only property: the internal run's ``name``."""
    return property(lambda view: getattr(view._run, name), doc=doc)


class RunDir:
    """A run directory, read-only (open with :meth:`open` or ``capevolve.open_run``)."""

    __slots__ = ("_run",)
    root: Path = _read("root", "The run directory.")
    run_id: str = _read("run_id", "The run's id: its directory's name.")
    manifest: RunManifest = _read("manifest", "run.json: the config snapshot, versions, seed, "
                                  "task count.")
    splits: Splits = _read("splits", "The frozen train / val / test task ids.")
    best_id: str = _read("best_id", "The current best candidate.")

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
