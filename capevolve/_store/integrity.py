"""Whether a run's event log, parts and documents are the ones capevolve wrote.

Each disagreement with the signed log is a :class:`Problem`. Evidence, not proof.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from capevolve._store import heads, jsonfiles, signing
from capevolve._store.candidates import digests_hash, file_digests
from capevolve._store.compact_intent import pending_files
from capevolve._store.partcache import PartCache, other_process_holds
from capevolve.errors import CapevolveError, RunDirError
from capevolve.kinds import EventKind
from capevolve.records import (
    CompactedPart,
    EvalFinished,
    EvalStarted,
    Event,
    Finalized,
    PartsCompacted,
    PartWritten,
    QuarantinedEvent,
    RunCreated,
    SnapshotEvent,
)

if TYPE_CHECKING:
    from capevolve._store.rundir import RunDir

_CHUNK = 1 << 20


def sha256_file(path: Path) -> str:
    """sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def relative(root: Path, path: Path) -> str:
    """``path`` relative to ``root`` (POSIX); RunDirError when outside it."""
    try:
        return Path(path).resolve().relative_to(Path(root).resolve()).as_posix()
    except ValueError:
        raise RunDirError(f"{path}: not inside the run dir {root}") from None


def part_fields(root: Path, path: Path, n_rows: int) -> dict[str, Any]:
    """The ``part_written`` fields of the part at ``path``."""
    import pyarrow.parquet as pq

    try:
        footer_rows = pq.ParquetFile(path).metadata.num_rows
        size = path.stat().st_size
        digest = sha256_file(path)
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise RunDirError(f"{path}: cannot record the part ({exc})") from None
    if footer_rows != n_rows:
        raise RunDirError(f"{path}: holds {footer_rows} rows, the writer wrote {n_rows}")
    return {"path": relative(root, path), "sha256": digest, "size": size, "n_rows": n_rows}


@dataclass(frozen=True)
class Problem:
    """One thing that is not as capevolve wrote it."""

    kind: str
    """events, head, part_unrecorded, part_changed, part_missing, document or candidate."""
    path: str
    """Relative to the run dir (absolute when outside it)."""
    what: str
    """One line."""

    def line(self) -> str:
        return f"{self.path}: {self.what}"


@dataclass
class Verification:
    """Everything :func:`verify` found."""

    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """What could not be checked, and why."""
    events: int = 0
    parts: int = 0
    hashed: int = 0
    """Parts hashed this time (not matched by the cache)."""

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "problems": [asdict(p) for p in self.problems],
                "notes": self.notes, "events": self.events, "parts": self.parts,
                "hashed": self.hashed}


class _Stop(Exception):
    """Stop at the first problem."""


class _Checker:
    def __init__(self, run: RunDir, first_only: bool) -> None:
        self.run, self.first_only = run, first_only
        self.result = Verification()

    def problem(self, kind: str, path: str, what: str) -> None:
        self.result.problems.append(Problem(kind, path, what))
        if self.first_only:
            raise _Stop

    def events(self) -> list[Event]:
        log = self.run._log
        try:
            log.events()
        except RunDirError as exc:
            text, prefix = str(exc), f"{self.run.root}/"
            where = text.split(": ", 1)
            self.problem("events", where[0].removeprefix(prefix),
                         where[1] if len(where) > 1 else text)
        events = log.verified()
        self.result.events = len(events)
        if log.unsigned:
            self.result.notes.append(f"events.jsonl: signatures not checked: {log.unsigned}")
        return events

    def head(self) -> None:
        log = self.run._log
        if log.key_id is None:
            return
        project = self.run.manifest.project_dir
        for where in (None, project):  # beside the key, then in the project
            path = (heads.key_head_path(log.key_id, self.run.root) if where is None
                    else heads.head_path(where, log.key_id, self.run.root))
            try:
                mirrored = heads.read(where, log.key_id, log.key, self.run.root)
            except RunDirError as exc:
                self.problem("head", str(path), str(exc).split(": ", 1)[-1])
                continue
            if mirrored is None:
                self._no_head(where, path)
            else:
                self._against(mirrored)

    def _no_head(self, where: Path | str | None, path: Path) -> None:
        """A missing mirror is a problem beside a present key, unless the run was copied."""
        log = self.run._log
        assert log.key_id is not None
        if where is not None or log.key is None:
            self.result.notes.append(f"{path}: no chain head mirrored: lines removed from "
                                     "the end of events.jsonl cannot be detected by it")
        elif heads.copied_from_elsewhere(log.key_id, self.run.root):
            self.result.notes.append(f"{path}: absent: this run dir is a copy of a run made "
                                     "at another path; the end of events.jsonl is not checked")
        else:
            self.problem("head", str(path), "the chain head kept beside the run's key is "
                         "missing: events may have been removed from the end of events.jsonl")

    def _against(self, mirrored: heads.Head) -> None:
        hashes = self.run._log.hashes
        if len(hashes) < mirrored.n_events:
            self.problem("events", "events.jsonl",
                         f"ends after {len(hashes)} events but {mirrored.path} records "
                         f"{mirrored.n_events}: events were removed from the end")
        elif hashes[mirrored.n_events - 1] != mirrored.head:
            self.problem("events", "events.jsonl",
                         f"event {mirrored.n_events} differs from the chain head mirrored in "
                         f"{mirrored.path}")

    def parts(self, events: list[Event]) -> None:
        root, rollouts = self.run.root, self.run.layout.rollouts
        on_disk = sorted(p for p in rollouts.rglob("*.parquet") if p.is_file()) \
            if rollouts.is_dir() else []
        # then an unfinished compaction's old and new parts, then the log as it is now:
        # a compaction running meanwhile is then seen as pending or as recorded
        pending = pending_files(self.run.layout)
        try:
            events = self.run._log.events()
        except RunDirError:
            pass  # the events verified so far
        recorded, retired = recorded_parts(events)
        self.result.parts = len(on_disk)
        writing = other_process_holds(self.run.layout.lock)
        cache = PartCache(self.run._log.key_id)
        try:
            for path in on_disk:
                rel = path.relative_to(root).as_posix()
                record = recorded.pop(rel, None)
                if record is None:
                    if rel in pending:
                        self.result.notes.append(f"{rel}: named by an unfinished compaction "
                                                 "(killed); the next evaluate settles it")
                    elif not path.is_file():
                        continue  # removed by a compaction since it was listed
                    elif rel in retired:
                        self.problem("part_unrecorded", rel, "retired by a compaction "
                                     "(parts_compacted event) but on disk again")
                    elif writing:
                        self.result.notes.append(f"{rel}: not recorded yet (a writer holds "
                                                 "the run lock)")
                    elif _journalled(self.run.layout.journal, _session(path)):
                        self.result.notes.append(f"{rel}: not recorded yet: its evaluation "
                                                 "was killed; the next evaluate or finalize "
                                                 "records it from the session's journal")
                    else:
                        self.problem("part_unrecorded", rel, "not recorded in events.jsonl: "
                                     "capevolve did not write this part")
                    continue
                self._check_part(path, rel, record, cache)
            for rel in sorted(recorded):
                self.problem("part_missing", rel, "recorded in events.jsonl but missing "
                             "(deleted or moved by hand)")
        finally:
            cache.save()

    def _check_part(self, path: Path, rel: str, record: PartWritten | CompactedPart,
                    cache: PartCache) -> None:
        try:
            info = path.stat()
        except OSError as exc:
            self.problem("part_changed", rel, f"unreadable ({exc})")
            return
        if info.st_size != record.size:
            self.problem("part_changed", rel, f"{info.st_size} bytes, {record.size} were "
                         "written: changed since capevolve wrote it")
            return
        stamp = [info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino]
        if cache.get(rel) == [*stamp, record.sha256]:
            return
        self.result.hashed += 1
        try:
            digest = sha256_file(path)
        except OSError as exc:
            self.problem("part_changed", rel, f"unreadable ({exc})")
            return
        if digest != record.sha256:
            self.problem("part_changed", rel, "its sha256 differs from the one recorded when "
                         "it was written: changed since capevolve wrote it")
            return
        cache.put(rel, [*stamp, digest])

    def documents(self, events: list[Event]) -> None:
        layout = self.run.layout
        started = [i for i, e in enumerate(events) if e.kind == EventKind.FINALIZE_STARTED]
        done = [e for e in events if isinstance(e, Finalized)]
        if started and not layout.seal.is_file():
            self.problem("document", "seal.json", f"missing, though finalize started (event "
                         f"{started[0] + 1} of events.jsonl): deleted by hand")
        if done:
            digest = done[-1].final_sha256
            if not layout.final.is_file():
                self.problem("document", "final.json", "missing, though the run was "
                             "finalized (a finalized event): deleted by hand")
            elif digest is not None and sha256_file(layout.final) != digest:
                self.problem("document", "final.json", "differs from the final.json "
                             "finalize wrote (its sha256 is in the finalized event)")
        elif layout.final.is_file() and not started:
            self.problem("document", "final.json", "no finalize is recorded in "
                         "events.jsonl: not written by capevolve finalize")
        self.manifest(events)
        self.candidates(events)
        self.evaluations(events)

    def manifest(self, events: list[Event]) -> None:
        """run.json matches the sha256 in the signed ``run_created`` event."""
        created = next((e for e in events if isinstance(e, RunCreated)), None)
        if created is None or created.run_json_sha256 is None:
            return
        try:
            data = jsonfiles.read(self.run.layout.run_json)
            digest = signing.manifest_digest(data) if isinstance(data, dict) else ""
        except (OSError, ValueError) as exc:
            self.problem("document", "run.json", f"unreadable ({exc})")
            return
        if digest != created.run_json_sha256:
            self.problem("document", "run.json", "differs from the run.json the run was "
                         "created with (its sha256 is in the run_created event): the frozen "
                         "config was edited")

    def candidates(self, events: list[Event]) -> None:
        """Every snapshot has a ``snapshot`` event and still hashes to its content hash."""
        recorded = {e.candidate_id: e.hash for e in events if isinstance(e, SnapshotEvent)}
        folder = self.run.layout.candidates
        for meta_path in sorted(folder.glob("*/candidate.json")) if folder.is_dir() else []:
            candidate_id = meta_path.parent.name
            rel = meta_path.parent.relative_to(self.run.root).as_posix()
            digest = recorded.get(candidate_id)
            if digest is None:
                self.problem("candidate", rel, "no snapshot event records this candidate: "
                             "capevolve did not snapshot it")
                continue
            try:
                meta = jsonfiles.read(meta_path)
            except (OSError, ValueError) as exc:
                self.problem("candidate", f"{rel}/candidate.json", f"unreadable ({exc})")
                continue
            try:
                files = self.run.layout.candidate_files(candidate_id)
                digests = file_digests(files) if files.is_dir() else None
            except (OSError, ValueError, CapevolveError) as exc:
                self.problem("candidate", rel, f"unreadable ({exc})")
                continue
            if not isinstance(meta, dict) or meta.get("hash") != digest \
                    or meta.get("files") != digests or digests is None \
                    or digests_hash(digests) != digest:
                self.problem("candidate", rel, "differs from the snapshot recorded in "
                             "events.jsonl (its content hash): changed since it was taken")

    def evaluations(self, events: list[Event]) -> None:
        """A complete evaluation record agrees with its last ``eval_finished`` event."""
        last: dict[str, tuple[int, Event | None]] = {}
        for line, seen in enumerate(events, 1):
            if isinstance(seen, (EvalStarted, EvalFinished)):
                last[seen.eval_id] = (line, seen)
        folder = self.run.layout.evals
        cache = PartCache(self.run._log.key_id)  # records found agreeing, by their stamp
        try:
            for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
                self._evaluation(path, last, cache)
        finally:
            cache.save()

    def _evaluation(self, path: Path, last: dict[str, tuple[int, Event | None]],
                    cache: PartCache) -> None:
        """Check one record unless the cache vouches for it."""
        rel = path.relative_to(self.run.root).as_posix()
        try:
            info = path.stat()
            stamp = [info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino]
            hit = cache.get(rel)
            if hit is not None and hit[:4] == stamp and (
                    hit[4] == "" or (last.get(hit[4]) or (0, None))[0] == hit[5]):
                return
            data = jsonfiles.read(path)
        except (OSError, ValueError):
            return  # unreadable records are refused where they are read
        if not isinstance(data, dict) or data.get("status") != "complete":
            cache.put(rel, [*stamp, "", 0])
            return
        eval_id = str(data.get("eval_id"))
        number, event = last.get(eval_id) or (0, None)
        if isinstance(event, EvalStarted):
            self.result.notes.append(f"{rel}: complete, but its eval_finished event is "
                                     "not recorded (killed in between)")
        elif not isinstance(event, EvalFinished):
            self.problem("document", rel, "says complete, but no such evaluation is "
                         "recorded in events.jsonl")
        elif _finished_fields(event) != _record_fields(data):
            self.problem("document", rel, f"differs from its eval_finished event (event "
                         f"{number} of events.jsonl): edited by hand")
        else:
            cache.put(rel, [*stamp, eval_id, number])


def recorded_parts(events: list[Event]) -> tuple[dict[str, PartWritten | CompactedPart],
                                                 set[str]]:
    """Path -> record of each part the log holds now, and the paths compactions retired."""
    recorded: dict[str, PartWritten | CompactedPart] = {}
    retired: set[str] = set()
    for event in events:
        if isinstance(event, PartWritten):
            recorded[event.path] = event
        elif isinstance(event, PartsCompacted):
            for old in event.retired:
                recorded.pop(old, None)
                retired.add(old)
            recorded.update((part.path, part) for part in event.parts)
        elif isinstance(event, QuarantinedEvent):
            for moved in event.moved:
                recorded.pop(moved, None)
    return recorded, retired


def _finished_fields(event: EvalFinished) -> tuple[Any, ...]:
    """What an ``eval_finished`` event vouches for."""
    return (str(event.status), event.mean, event.stderr, event.n_scored, str(event.purpose),
            event.first_trial, event.subset_sha256)


def _record_fields(data: dict[str, Any]) -> tuple[Any, ...]:
    """The same fields of a record's JSON."""
    subset = data.get("task_subset")
    return (data.get("status"), data.get("mean"), data.get("stderr"), data.get("n_scored"),
            data.get("purpose", "gate"), data.get("first_trial", 0),
            subset.get("sha256") if isinstance(subset, dict) else None)


def _session(part: Path) -> str:
    """The session in a part's name."""
    pieces = part.stem.rsplit("-", 2)
    return pieces[1] if len(pieces) == 3 else ""


def _journalled(journal: Path, session: str) -> bool:
    """True when ``session`` still has journal files: the next evaluate settles it."""
    return bool(session) and session.isalnum() and journal.is_dir() \
        and any(journal.glob(f"{session}*"))


def verify(run: RunDir, first_only: bool = False) -> Verification:
    """Check the event log, head, parts and documents of ``run``."""
    checker = _Checker(run, first_only)
    try:
        events = checker.events()
        checker.head()
        checker.parts(events)
        checker.documents(events)
    except _Stop:
        pass
    return checker.result


def refuse_tampered(run: RunDir) -> None:
    """RunDirError naming the first problem :func:`verify` finds."""
    result = verify(run, first_only=True)
    if result.problems:
        raise RunDirError(f"{run.root}/{result.problems[0].line()}; `capevolve verify "
                          f"--run-dir {run.root}` lists every problem")
