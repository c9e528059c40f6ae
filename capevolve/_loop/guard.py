"""What candidate code wrote while an evaluation ran, checked before its rows count.

Changed run documents are restored; a changed project file or a foreign rollout part voids the
evaluation (RunDirError). Size, mtime and inode catch writes, not a forger restoring them.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from capevolve._lazy import lazy_module
from capevolve._project import fingerprint as project_fingerprint
from capevolve._project.loader import Project
from capevolve._store.evals import write_eval
from capevolve._store.integrity import relative
from capevolve._store.journal.recover import live_sessions
from capevolve._store.rollouts import compact as compaction
from capevolve._store.rundir import RunDir, utc_now
from capevolve.errors import RunDirError
from capevolve.kinds import EvalStatus, EventKind
from capevolve.records import EvalRecord, PartWritten, parse_event

if TYPE_CHECKING:
    import pyarrow.parquet as pq
else:  # imported at first use: an evaluation reaches its first rollout without it
    pq = lazy_module("pyarrow.parquet")


def _stat_tree(root: Path) -> dict[Path, tuple[int, int, int]]:
    if not root.is_dir():
        return {}
    found = {}
    for dirpath, _, filenames in os.walk(root):
        for name in filenames:
            path = Path(dirpath, name)
            try:
                st = path.stat()
            except OSError:
                continue
            found[path] = (st.st_size, st.st_mtime_ns, st.st_ino)
    return found


def _documents(run: RunDir) -> dict[Path, bytes]:
    layout = run.layout
    found: dict[Path, bytes] = {}
    for path in [layout.events, layout.run_json, layout.splits_json, layout.state, layout.seal,
                 layout.final, *_stat_tree(layout.candidates), *_stat_tree(layout.evals),
                 *_stat_tree(layout.diagnoses)]:
        try:
            found[path] = path.read_bytes()
        except OSError:
            continue
    return found


class EvaluationGuard:
    """Snapshot before the engine runs; :meth:`documents_changed` and :meth:`check` after."""

    def __init__(self, run: RunDir, project: Project) -> None:
        self.run, self.project = run, project
        with run._appending:  # no concurrent evaluation's write half-seen
            self.before = _stat_tree(run.layout.rollouts)
            self.documents = _documents(run)
            self.documents.pop(run.layout.state, None)
            self._mark = len(run._log.appended)
            self._writes = run.own_writes_mark

    def documents_changed(self) -> str | None:
        """Restore every run document candidate code changed; the first, in words."""
        run, events = self.run, self.run.layout.events
        with run._appending:
            own = list(run._log.appended[self._mark:])
            expected = dict(self.documents)
            expected[events] = self.documents.get(events, b"") + b"".join(own)
            expected.update(run.own_writes_since(self._writes))
            now = _documents(run)
            now.pop(run.layout.state, None)
            changed = sorted(p for p in set(now) | set(expected) if now.get(p) != expected.get(p))
            for path in changed:
                if path == events:  # back to its bytes before, then capevolve's own events
                    _restore(path, self.documents.get(events, b""))
                elif path in expected:
                    _restore(path, expected[path])
                else:
                    _move(path, run.layout.quarantine() / "documents" / path.relative_to(run.root))
            if changed:
                run.forget_cached_events()
                if events in changed:
                    self._reappend(own)
            run._write_state()  # a cache: whatever it holds now is rewritten from the log
        if not changed:
            return None
        return (f"{changed[0]} was changed during the evaluation by something other than "
                "capevolve (restored)")

    def _reappend(self, lines: list[bytes]) -> None:
        """Append this evaluation's events again after the restored log."""
        for line in lines:
            data = json.loads(line)
            data.pop("prev", None)
            data.pop("mac", None)
            self.run._log.append(parse_event(data, str(self.run.layout.events)))
        self.run._mirror_head()

    def _record_own_parts(self, ours: list[Path]) -> None:
        """Record this evaluation's unrecorded parts (candidate code may have broken the log)."""
        recorded = {e.path for e in self.run.events(EventKind.PART_WRITTEN)
                    if isinstance(e, PartWritten)}
        for path in ours:
            if path.is_file() and relative(self.run.root, path) not in recorded:
                self.run.record_part(path, pq.ParquetFile(path).metadata.num_rows)

    def foreign_parts(self, ours: list[Path]) -> list[Path]:
        """Rollout files created or changed since the snapshot, not ours."""
        mine = {Path(p) for p in ours} | self._recorded_since()
        return sorted(p for p, stat in _stat_tree(self.run.layout.rollouts).items()
                      if p not in mine and self.before.get(p) != stat
                      and not _live_session_file(p))

    def _recorded_since(self) -> set[Path]:
        found = set()
        for line in list(self.run._log.appended[self._mark:]):
            if b'"part_written"' in line or b'"parts_compacted"' in line:
                data = json.loads(line)
                if data.get("kind") == EventKind.PART_WRITTEN and data.get("path"):
                    found.add(self.run.root / str(data["path"]))
                elif data.get("kind") == EventKind.PARTS_COMPACTED:
                    found.update(self.run.root / str(part["path"])
                                 for part in data.get("parts") or [] if part.get("path"))
        return found

    def check(self, record: dict[str, Any], ours: list[Path],
              documents: str | None = None) -> None:
        """Void the evaluation if anything was tampered with (``documents``: from
        :meth:`documents_changed`)."""
        problems = project_fingerprint.changes(self.project, self.run.manifest.fingerprint,
                                               new=False)
        why = f"{problems[0]} during the evaluation" if problems else documents
        if documents is not None:
            self._record_own_parts([Path(p) for p in ours])
        foreign = self.foreign_parts(ours)
        if foreign:
            self._quarantine([p for p in foreign if p not in self.before])
            why = why or (f"{foreign[0]} was written during the evaluation by something other "
                          "than capevolve's writer (moved to quarantine when new)")
        if why is not None:
            self._refuse(record, f"{why}; its rows do not count")

    def _quarantine(self, paths: list[Path]) -> None:
        layout = self.run.layout
        for path in paths:
            _move(path, layout.quarantine() / path.relative_to(layout.rollouts))

    def _refuse(self, record: dict[str, Any], why: str) -> None:
        write_eval(self.run, EvalRecord.model_validate({
            **record, "status": EvalStatus.INCOMPLETE, "incomplete_reason": why,
            "refused": why, "finished_at": utc_now()}))
        self.run.record(EventKind.EVAL_FINISHED, eval_id=record["eval_id"],
                         candidate_id=record["candidate_id"], split=record["split"],
                         status=EvalStatus.INCOMPLETE, mean=None, stderr=None, n_scored=0)
        raise RunDirError(f"evaluation {record['eval_id']} refused: {why}")


_PART_NAME = re.compile(r"-(?P<session>[0-9a-f]{8})-[0-9]+\.parquet(\.tmp|\.compacting)?$")


def _live_session_file(path: Path) -> bool:
    """A part or temporary file of an evaluation or compaction running in this process."""
    found = _PART_NAME.search(path.name)
    return found is not None and (found["session"] in live_sessions
                                  or found["session"] in compaction.running)


def _move(path: Path, target: Path) -> None:
    """Move ``path`` aside to ``target``."""
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(path, target)


def _restore(path: Path, data: bytes) -> None:
    """Write ``data`` into ``path`` in place (the log's cache keys on the inode), whatever its
    mode."""
    mode = None
    if path.exists():
        mode = path.stat().st_mode & 0o777
        os.chmod(path, mode | 0o200)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(data)
    if mode is not None:
        os.chmod(path, mode)
