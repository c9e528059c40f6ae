"""RunDir: the internal reader and writer of one run; ``capevolve.RunDir`` is its read-only view.

``events.jsonl`` is the truth, ``state.json`` a cache. Opening writes nothing; writes hold the lock.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import threading
from collections.abc import Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, ClassVar, Self, cast

from pydantic import ValidationError

from capevolve._store import jsonfiles, signing
from capevolve._store.baton import Baton
from capevolve._store.candidates import (
    content_hash,
    digests_hash,
    file_digests,
    install_snapshot,
)
from capevolve._store.events import SPEND_FIELDS, EventLog, Spend
from capevolve._store.layout import Layout
from capevolve._store.lock import hold
from capevolve._store.splits import Splits, read_splits, write_splits
from capevolve.errors import CandidateError, GateError, RecordError, RunDirError
from capevolve.kinds import SEED_ID, Decision, EvalStatus, EventKind, Split
from capevolve.records import (
    EVENT_KIND_PATTERN,
    LIBRARY_EVENTS,
    USER_KINDS_BUILTIN,
    CandidateRecord,
    Event,
    GateEvent,
    PartWritten,
    RunManifest,
    StateRecord,
    UserEvent,
    parse_record,
)

__all__ = ["CANDIDATE_ID", "RunDir", "Spend", "utc_now"]

CANDIDATE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def utc_now() -> str:
    """Current UTC time, ISO 8601 with microseconds."""
    return dt.datetime.now(dt.UTC).isoformat(timespec="microseconds")


def _read_json(path: Path, what: str) -> Any:
    try:
        return jsonfiles.read(path)
    except (OSError, ValueError) as exc:
        raise RunDirError(f"{path}: unreadable {what} ({exc})") from None


class RunDir:
    """A run directory: :meth:`create` a new one, :meth:`open` an existing one."""

    _user_kinds: ClassVar[set[str]] = set(USER_KINDS_BUILTIN)
    _appending: ClassVar[threading.RLock] = threading.RLock()  # appends + state.json

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root).resolve()
        self.layout = Layout(self.root)
        self._manifest: RunManifest | None = None
        self._splits: Splits | None = None
        self._log = EventLog(self.layout.events)
        self._candidates: dict[str, CandidateRecord] = {}
        self._own_writes: list[tuple[Path, bytes]] = []
        self.serial = Baton()
        """Held by an evaluation's bookkeeping; yielded while its engine runs."""
        self.shared: dict[str, Any] = {}
        """Per-instance state the verbs share between threads."""

    def write_document(self, path: Path, obj: Any, indent: int | None = 2) -> None:
        """Write a JSON document atomically under the append lock, as capevolve's own write."""
        self.write_own_bytes(Path(path), (jsonfiles.dumps(obj, indent) + "\n").encode("utf-8"))

    def write_own_bytes(self, path: Path, data: bytes) -> None:
        """Write a file atomically (fsynced) under the append lock, as capevolve's own write."""
        with self._appending:
            jsonfiles.write_bytes_atomic(path, data)
            self._own_writes.append((path, data))

    def own_writes_since(self, mark: int) -> dict[Path, bytes]:
        """Path -> last bytes this process wrote since ``mark`` (an :attr:`own_writes_mark`)."""
        with self._appending:
            return dict(self._own_writes[mark:])

    @property
    def own_writes_mark(self) -> int:
        with self._appending:
            return len(self._own_writes)

    def forget_cached_events(self) -> None:
        """Drop the cached event log."""
        self._log = EventLog(self.layout.events)

    # -- creation and opening -------------------------------------------------------------

    @classmethod
    def create(cls, root: Path | str, manifest: RunManifest | Mapping[str, Any],
               splits: Splits, seed: Path | str) -> RunDir:
        """Make a run dir (manifest, frozen splits, the seed as best); refuses an existing run."""
        run = cls(Path(root))
        if run.root.exists() and not run.root.is_dir():
            raise RunDirError(f"{run.root}: exists and is not a directory")
        fields = manifest.to_json() if isinstance(manifest, RunManifest) else dict(manifest)
        try:
            record = RunManifest.model_validate({**fields, "splits_checksum": splits.checksum()})
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(str(p) for p in error["loc"]) or "<root>"
            raise RunDirError(f"{run.layout.run_json}: invalid manifest: {where}: "
                              f"{error['msg']}") from None
        run.root.mkdir(parents=True, exist_ok=True)
        with run.locked():
            if run.layout.run_json.exists():
                raise RunDirError(f"{run.root}: already holds a run (run.json exists)")
            for folder in (run.layout.candidates, run.layout.rollouts, run.layout.evals):
                folder.mkdir(parents=True, exist_ok=True)
            write_splits(splits, run.layout.splits_json)
            jsonfiles.write_atomic(run.layout.run_json, record.to_json())
            run.record(EventKind.RUN_CREATED, run_id=record.run_id, key_id=signing.new_key(),
                       run_json_sha256=signing.manifest_digest(
                           jsonfiles.read(run.layout.run_json)))
            run.snapshot(SEED_ID, seed, role="seed")
            run.record(EventKind.SET_BEST, candidate_id=SEED_ID, reason="seed")
        return run

    @classmethod
    def open(cls, root: Path | str) -> Self:
        """Open a run read-only, verified; RunDirError names the first bad record or file."""
        run = cls(Path(root))
        if not run.layout.run_json.is_file():
            raise RunDirError(f"{run.root}: not a capevolve run dir (no run.json)")
        run.splits  # noqa: B018 - validates run.json and the splits checksum
        test_dir = run.layout.split_rollouts(Split.TEST)
        if test_dir.is_dir() and any(test_dir.rglob("*.parquet")) \
                and not run.layout.seal.is_file():
            raise RunDirError(f"{test_dir}: test rollouts exist without a seal: the test "
                              "split was written outside `capevolve finalize`")
        from capevolve._store.integrity import refuse_tampered

        refuse_tampered(run)  # history and rows as capevolve wrote them (cached hashes)
        return run

    @property
    def manifest(self) -> RunManifest:
        """run.json: config snapshot, versions, seeds (validated)."""
        if self._manifest is None:
            path = self.layout.run_json
            self._manifest = parse_record(RunManifest, _read_json(path, "manifest"), str(path))
        return self._manifest

    @property
    def run_id(self) -> str:
        return self.manifest.run_id

    @property
    def splits(self) -> Splits:
        """The frozen splits, checked against both splits.json and run.json."""
        if self._splits is None:
            splits = read_splits(self.layout.splits_json)
            if splits.checksum() != self.manifest.splits_checksum:
                raise RunDirError(
                    f"{self.layout.splits_json}: does not match the checksum frozen in run.json"
                )
            self._splits = splits
        return self._splits

    def locked(self) -> AbstractContextManager[bool]:
        """Hold the run's writer lock for the block (re-entrant)."""
        return hold(self.layout.lock)

    def finalized(self) -> bool:
        """True once finalize has written final.json."""
        return self.layout.final.is_file()

    def require_open(self, verb: str) -> None:
        """Refuse ``verb`` once the run is finalized (final.json) or being finalized (seal.json)."""
        if self.layout.final.is_file():
            raise RunDirError(f"run is finalized (final.json): {verb} refused; the run is "
                              "closed, start a new run to go on")
        if self.layout.seal.is_file():
            raise RunDirError(f"run is being finalized (seal.json): {verb} refused; the "
                              "best is fixed once the test seal is taken")

    # -- events and derived state ---------------------------------------------------------

    def events(self, kind: EventKind | str | None = None) -> list[Event]:
        """Every event, optionally of one kind, in log order."""
        return self._log.events(kind)

    @property
    def best_id(self) -> str:
        """The current best candidate (the last set_best event)."""
        best = self._log.best_id
        if best is None:
            raise RunDirError(f"{self.layout.events}: no set_best event: the run has no best")
        return best

    @property
    def spent(self) -> Spend:
        """Everything spent so far (a copy)."""
        return self._log.spent

    def record(self, kind: EventKind, **fields: Any) -> Event:
        """Append a library event (validated by its model) and refresh state.json."""
        model = LIBRARY_EVENTS[EventKind(kind)]
        return self._append(cast(Event, model(kind=kind, ts=utc_now(), pid=os.getpid(),
                                              **fields)))

    def _append(self, event: Event) -> Event:
        """Append ``event`` to the log, then refresh state.json and the mirrored chain head."""
        with self.locked(), self._appending:
            stored = self._log.append(event)
            self._write_state()
            self._mirror_head()
        return stored

    def _mirror_head(self) -> None:
        from capevolve._store import heads

        log = self._log
        if log.key is not None and log.key_id is not None and log.head is not None:
            heads.write(self.manifest.project_dir, log.key_id, log.key, self.root,
                        len(log.hashes), log.head)

    def record_part(self, path: Path | str, n_rows: int) -> PartWritten:
        """Record a part just durably renamed into place; verification checks it against this."""
        from capevolve._store.integrity import part_fields

        fields = part_fields(self.root, Path(path), n_rows)
        return cast(PartWritten, self.record(EventKind.PART_WRITTEN, **fields))

    def _write_state(self) -> None:
        state = StateRecord(best_id=self._log.best_id, n_events=len(self._log),
                            spent=self._log.spent.to_dict(),
                            budget=self.manifest.config.budget.model_dump(mode="json"))
        jsonfiles.write_atomic(self.layout.state, state.to_json(), sync=False)  # a cache

    @classmethod
    def register_event_kind(cls, name: str) -> None:
        """Allow :meth:`log_event` the user kind ``name`` in this process."""
        if not re.fullmatch(EVENT_KIND_PATTERN, str(name)):
            raise RecordError(f"event kind {name!r}: use lowercase letters, digits and _")
        if name in {k.value for k in LIBRARY_EVENTS}:
            raise RecordError(f"event kind {name!r} is recorded by capevolve itself")
        cls._user_kinds.add(str(name))

    def log_event(self, kind: str, **fields: Any) -> UserEvent:
        """Record a user event of ``note`` or a registered kind, JSON ``fields`` under ``data``;
        else RecordError."""
        name = str(kind)
        if name in {k.value for k in LIBRARY_EVENTS}:
            raise RecordError(f"log_event: {name!r} events are recorded by capevolve itself "
                              "(use the verb: evaluate, gate, accept, reject, finalize)")
        if name not in self._user_kinds:
            raise RecordError(f"log_event: unregistered event kind {name!r}; call "
                              f"RunDir.register_event_kind({name!r}) first")
        try:
            jsonfiles.dumps(fields)  # JSON values only: no objects, NaN or infinities
            event = UserEvent(kind=name, ts=utc_now(), pid=os.getpid(), data=fields)
        except (ValidationError, TypeError, ValueError) as exc:
            raise RecordError(f"log_event {name!r}: fields must be JSON values ({exc})") from None
        return cast(UserEvent, self._append(event))

    def passing_gate(self, candidate_id: str) -> GateEvent:
        """The gate that licenses making ``candidate_id`` the best, or GateError."""
        from capevolve._store.evals import latest_complete_eval

        best_id = self.best_id
        gates = [g for g in self.events(EventKind.GATE)
                 if isinstance(g, GateEvent) and g.candidate_id == candidate_id
                 and g.best_id == best_id and not g.exploratory]
        if not gates:
            raise GateError(f"candidate {candidate_id!r} has no recorded gate against the "
                            f"current best {best_id!r}; run `capevolve gate` first")
        last = gates[-1]
        if last.decision != Decision.ACCEPT:
            raise GateError(f"the last gate of {candidate_id!r} against {best_id!r} said "
                            f"{last.decision}: {'; '.join(last.reasons)}")
        for eval_id, owner in ((last.candidate_eval, candidate_id), (last.best_eval, best_id)):
            current = latest_complete_eval(self, owner, Split.VAL, n_trials=last.n_trials)
            if current is None or current.eval_id != eval_id \
                    or current.status != EvalStatus.COMPLETE:
                raise GateError("the evaluations changed since the gate; gate again")
        return last

    def set_best(self, candidate_id: str, **fields: Any) -> None:
        """Make ``candidate_id`` the best; it must hold a passing gate (:meth:`passing_gate`)."""
        with self.locked():
            self.require_open("set_best")
            self.candidate_meta(candidate_id)
            if candidate_id == self.best_id:
                raise GateError(f"set_best: {candidate_id!r} is already the best")
            gate = self.passing_gate(candidate_id)
            fields = {"reason": "accepted", "previous_best": self.best_id, **fields}
            try:
                self.record(EventKind.SET_BEST, candidate_id=candidate_id, gate_ts=gate.ts,
                             **fields)
            except ValidationError as exc:
                raise RecordError(f"set_best: {exc.errors()[0]['msg']}") from None

    def update_spent(self, **increments: Any) -> None:
        """Record finite, non-negative increments of SPEND_FIELDS; RecordError otherwise."""
        unknown = set(increments) - set(SPEND_FIELDS)
        if unknown:
            raise RecordError(f"update_spent: unknown fields {sorted(unknown)}")
        bad = {k: v for k, v in increments.items() if isinstance(v, bool)}
        if bad:
            raise RecordError(f"update_spent: {sorted(bad)} must be numbers, not booleans")
        try:
            self.record(EventKind.SPEND, **increments)
        except ValidationError as exc:
            error = exc.errors()[0]
            raise RecordError(f"update_spent: {'.'.join(map(str, error['loc']))}: "
                              f"{error['msg']} (spend only adds)") from None

    # -- candidates -------------------------------------------------------------------------

    def candidate_ids(self) -> list[str]:
        """Ids of every snapshotted candidate, sorted."""
        if not self.layout.candidates.is_dir():
            return []
        return sorted(p.parent.name for p in self.layout.candidates.glob("*/candidate.json"))

    def candidate_meta(self, candidate_id: str) -> CandidateRecord:
        """candidate.json of a snapshot; CandidateError for an unknown id."""
        if candidate_id in self._candidates:
            return self._candidates[candidate_id]
        path = self.layout.candidate_meta(candidate_id)
        if not CANDIDATE_ID.match(str(candidate_id)) or not path.is_file():
            raise CandidateError(f"candidate {candidate_id!r}: no such candidate in {self.root}")
        record = parse_record(CandidateRecord, _read_json(path, "candidate record"), str(path))
        if record.id != candidate_id:
            raise RunDirError(f"{path}: names candidate {record.id!r}, not {candidate_id!r}")
        self._candidates[candidate_id] = record
        return record

    def candidate_dir(self, candidate_id: str) -> Path:
        """A candidate's files, verified against its snapshot hash (edited: CandidateError)."""
        meta = self.candidate_meta(candidate_id)
        files = self.layout.candidate_files(candidate_id)
        digests = file_digests(files) if files.is_dir() else None
        if digests is None or digests != meta.files or digests_hash(digests) != meta.hash:
            raise CandidateError(f"{files}: candidate {candidate_id!r} changed since it was "
                                 "snapshotted (its content hash differs); snapshots are "
                                 "immutable")
        return files

    def find_candidate(self, digest: str) -> str | None:
        """The id of a snapshot with this content hash, or None."""
        for candidate_id in self.candidate_ids():
            if self.candidate_meta(candidate_id).hash == digest:
                return candidate_id
        return None

    def next_candidate_id(self) -> str:
        """The next free ``cand_NNN`` id."""
        numbers = [int(c[5:]) for c in self.candidate_ids() if re.fullmatch(r"cand_\d+", c)]
        return f"cand_{max(numbers, default=0) + 1:03d}"

    def snapshot(self, candidate_id: str, src: Path | str, **fields: Any) -> CandidateRecord:
        """Snapshot ``src`` immutably as ``candidate_id`` (``fields``: ``note``); a taken id
        returns its record for the same content, else CandidateError."""
        src = Path(src).resolve()
        if not src.is_dir():
            raise CandidateError(f"candidate: {src} is not a directory")
        if not CANDIDATE_ID.match(candidate_id):
            raise CandidateError(f"candidate id {candidate_id!r}: use letters, digits, _ . -")
        with self.locked():
            digest = content_hash(src)
            if self.layout.candidate_meta(candidate_id).is_file():
                existing = self.candidate_meta(candidate_id)
                if existing.hash != digest:
                    raise CandidateError(f"candidate {candidate_id!r}: id taken by other "
                                         "content")
                return existing
            taken = sorted(set(fields) & {"id", "hash", "source", "created_at", "files"})
            if taken:
                raise RecordError(f"snapshot: {taken} are set by capevolve, not the caller")
            try:
                meta = CandidateRecord(id=candidate_id, hash=digest, source=str(src),
                                       created_at=utc_now(), files={}, **fields)
            except ValidationError as exc:
                raise RecordError(f"snapshot: {exc.errors()[0]['msg']}") from None
            digests = install_snapshot(  # atomic: staged, then renamed into place
                src, self.layout.candidates / candidate_id, digest,
                lambda files: meta.model_copy(update={"files": files}).to_json())
            meta = meta.model_copy(update={"files": digests})
            self.record(EventKind.SNAPSHOT, candidate_id=candidate_id, hash=digest,
                         source=str(src))
        return meta
