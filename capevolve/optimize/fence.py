"""What a proposer may have written outside its prepared directory, checked after it ran."""

from __future__ import annotations

from pathlib import Path

from capevolve._loop import evaluate as evaluating
from capevolve._loop.guard import EvaluationGuard
from capevolve._project import fingerprint as project_fingerprint
from capevolve._store.iterations import LoopFiles
from capevolve._store.rundir import RunDir


class ProposalFence:
    """Snapshot at construction; :meth:`breach` after the proposals ran."""

    def __init__(self, run: RunDir, files: LoopFiles) -> None:
        self.run, self.files = run, files
        self.project = evaluating.run_project(run)
        self.guard = EvaluationGuard(run, self.project)
        self.loop_files: dict[Path, bytes | None] = {
            path: path.read_bytes() if path.is_file() else None
            for path in (files.ledger, files.loop_json)}

    def breach(self) -> tuple[str | None, bool]:
        """(what a proposer touched, in words, or None; True when the loop must stop)."""
        problems = project_fingerprint.changes(self.project, self.run.manifest.fingerprint,
                                               new=False)
        if problems:
            return (f"a proposer changed the project's frozen files ({problems[0]}); "
                    "restore them to continue the run", True)
        why = self.guard.documents_changed()
        for path, data in self.loop_files.items():
            now = path.read_bytes() if path.is_file() else None
            if now != data:
                if data is None:
                    path.unlink()
                else:
                    path.write_bytes(data)
                why = why or f"{path} was changed by a proposer (restored)"
        foreign = self.guard.foreign_parts([])
        if foreign:
            self.guard._quarantine([p for p in foreign if p not in self.guard.before])
            why = why or f"{foreign[0]} was written by a proposer (moved to quarantine)"
        return why and why.replace("during the evaluation by something other than capevolve",
                                   "by a proposer"), False
