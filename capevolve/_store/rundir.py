"""RunDir: one run's directory: manifest, frozen splits, candidates, events, spend, best.

``events.jsonl`` is the append-only source of truth; ``state.json`` is a cache derived from
it (best id and spend) that is rebuilt whenever it is missing or stale.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from capevolve._store import jsonfiles
from capevolve._store.candidates import content_hash, copy_readonly, file_digests
from capevolve.errors import CandidateError, RunDirError
from capevolve.kinds import EventKind
from capevolve._store.layout import Layout
from capevolve._store.splits import Splits, read_splits, write_splits

RUN_FORMAT = 1
CANDIDATE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def utc_now() -> str:
    """Current UTC time, ISO 8601 with microseconds."""
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="microseconds")


def _kind_name(kind: EventKind | str) -> str:
    """An event kind: one of EventKind, or a user's own lowercase name (``my_note``)."""
    name = str(kind)
    if not re.fullmatch(r"[a-z][a-z0-9_]{0,63}", name):
        raise ValueError(f"event kind {name!r}: use lowercase letters, digits and _")
    return name


@dataclass
class Spend:
    """What a run has spent so far (summed from SPEND events)."""

    iterations: int = 0
    metric_calls: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    cost_unrecorded: int = 0  # rollouts whose cost is unknown
    wall_s: float = 0.0

    def add(self, fields: dict[str, Any]) -> None:
        for name in ("iterations", "metric_calls", "tokens", "cost_unrecorded"):
            setattr(self, name, getattr(self, name) + int(fields.get(name) or 0))
        for name in ("cost_usd", "wall_s"):
            setattr(self, name, getattr(self, name) + float(fields.get(name) or 0.0))

    def to_dict(self) -> dict[str, Any]:
        """JSON form; ``cost_usd`` is None ("not recorded") when no rollout reported a cost."""
        data = asdict(self)
        data["cost_usd"] = round(self.cost_usd, 6) if self._any_cost_recorded() else None
        data["wall_s"] = round(self.wall_s, 3)
        return data

    def _any_cost_recorded(self) -> bool:
        return self.cost_usd > 0 or (self.metric_calls > self.cost_unrecorded)


@dataclass
class State:
    """Derived view of the event log."""

    best_id: str | None = None
    spent: Spend = field(default_factory=Spend)
    n_events: int = 0


class RunDir:
    """A run directory. Create with :meth:`create`, open an existing one with :meth:`open`."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root).resolve()
        self.layout = Layout(self.root)
        self._manifest: dict[str, Any] | None = None
        self._splits: Splits | None = None

    # -- creation and opening -------------------------------------------------------------

    @classmethod
    def create(cls, root: Path | str, manifest: dict[str, Any], splits: Splits) -> RunDir:
        """Make a new run dir with its manifest and frozen splits; refuses an existing run."""
        run = cls(Path(root))
        if run.root.exists() and not run.root.is_dir():
            raise RunDirError(f"{run.root}: exists and is not a directory")
        if run.layout.run_json.exists():
            raise RunDirError(f"{run.root}: already holds a run (run.json exists)")
        for folder in (run.root, run.layout.candidates, run.layout.rollouts, run.layout.evals):
            folder.mkdir(parents=True, exist_ok=True)
        write_splits(splits, run.layout.splits_json)
        manifest = {**manifest, "format": RUN_FORMAT, "splits_checksum": splits.checksum()}
        jsonfiles.write_atomic(run.layout.run_json, manifest)
        run.log_event(EventKind.RUN_CREATED, run_id=manifest.get("run_id"))
        return run

    @classmethod
    def open(cls, root: Path | str) -> RunDir:
        """Open an existing run dir; verifies the manifest and the splits checksum."""
        run = cls(Path(root))
        if not run.layout.run_json.is_file():
            raise RunDirError(f"{run.root}: not a capevolve run dir (no run.json)")
        run.splits  # noqa: B018 - verifies the checksum on every open
        test_dir = run.layout.rollouts / "split=test"
        if any(test_dir.rglob("*.parquet")) and not run.layout.seal.is_file():
            raise RunDirError(f"{test_dir}: test rollouts exist without a seal: the test "
                              "split was written outside `capevolve finalize`")
        run._refresh_state_cache()
        return run

    @property
    def manifest(self) -> dict[str, Any]:
        """run.json: config snapshot, versions, seeds."""
        if self._manifest is None:
            try:
                self._manifest = jsonfiles.read(self.layout.run_json)
            except (OSError, ValueError) as exc:
                raise RunDirError(f"{self.layout.run_json}: unreadable ({exc})") from None
        return self._manifest

    @property
    def run_id(self) -> str:
        return self.manifest["run_id"]

    @property
    def splits(self) -> Splits:
        """The frozen splits, checked against both splits.json and run.json."""
        if self._splits is None:
            splits = read_splits(self.layout.splits_json)
            if splits.checksum() != self.manifest.get("splits_checksum"):
                raise RunDirError(
                    f"{self.layout.splits_json}: does not match the checksum frozen in run.json"
                )
            self._splits = splits
        return self._splits

    def locked(self):
        """Context manager: hold this run dir's writer lock (see capevolve._store.lock)."""
        from capevolve._store.lock import hold

        return hold(self.layout.lock)

    # -- events and derived state ---------------------------------------------------------

    def log_event(self, kind: EventKind | str, **fields: Any) -> dict[str, Any]:
        """Append one record to events.jsonl (atomic single write) and refresh the cache.

        ``kind`` is an EventKind or a user's own lowercase name; fields must be JSON-able.
        """
        record = {"kind": _kind_name(kind), "ts": utc_now(), "pid": os.getpid(), **fields}
        jsonfiles.append_line(self.layout.events, record)
        self._write_state(self._derive_state())
        return record

    def events(self, kind: EventKind | str | None = None) -> list[dict[str, Any]]:
        """Every event (optionally of one kind) in log order."""
        wanted = None if kind is None else _kind_name(kind)
        return [e for e in jsonfiles.read_lines(self.layout.events)
                if wanted is None or e.get("kind") == wanted]

    def _derive_state(self) -> State:
        state = State()
        for event in jsonfiles.read_lines(self.layout.events):
            state.n_events += 1
            if event["kind"] == EventKind.SET_BEST:
                state.best_id = event["candidate_id"]
            elif event["kind"] == EventKind.SPEND:
                state.spent.add(event)
        return state

    def _refresh_state_cache(self) -> None:
        """Rebuild state.json when it is missing or behind the event log."""
        state = self._derive_state()
        try:
            cached = jsonfiles.read(self.layout.state).get("n_events")
        except (OSError, ValueError, AttributeError):
            cached = None
        if cached != state.n_events:
            self._write_state(state)

    def _write_state(self, state: State) -> None:
        jsonfiles.write_atomic(self.layout.state, {
            "best_id": state.best_id, "n_events": state.n_events,
            "spent": state.spent.to_dict(), "budget": self.manifest["config"].get("budget"),
        })

    @property
    def best_id(self) -> str | None:
        """The current best candidate (last set_best event)."""
        return self._derive_state().best_id

    @property
    def spent(self) -> Spend:
        """Everything spent so far."""
        return self._derive_state().spent

    def set_best(self, candidate_id: str, **fields: Any) -> None:
        """Make ``candidate_id`` the current best (it must be snapshotted)."""
        self.candidate_meta(candidate_id)
        self.log_event(EventKind.SET_BEST, candidate_id=candidate_id, **fields)

    def update_spent(self, **increments: Any) -> None:
        """Record spending: iterations, metric_calls, tokens, cost_usd, cost_unrecorded, wall_s."""
        unknown = set(increments) - set(Spend.__dataclass_fields__)
        if unknown:
            raise ValueError(f"update_spent: unknown fields {sorted(unknown)}")
        self.log_event(EventKind.SPEND, **increments)

    # -- candidates -------------------------------------------------------------------------

    def candidate_ids(self) -> list[str]:
        """Ids of every snapshotted candidate, sorted."""
        if not self.layout.candidates.is_dir():
            return []
        return sorted(p.parent.name for p in self.layout.candidates.glob("*/candidate.json"))

    def candidate_meta(self, candidate_id: str) -> dict[str, Any]:
        """candidate.json of a snapshot; CandidateError for an unknown id."""
        path = self.layout.candidate_meta(candidate_id)
        if not path.is_file():
            raise CandidateError(f"candidate {candidate_id!r}: no such candidate in {self.root}")
        return jsonfiles.read(path)

    def candidate_dir(self, candidate_id: str) -> Path:
        """The immutable capability files of a candidate."""
        self.candidate_meta(candidate_id)
        return self.layout.candidate_files(candidate_id)

    def find_candidate(self, digest: str) -> str | None:
        """The id of a snapshot with this content hash, if any."""
        for candidate_id in self.candidate_ids():
            if self.candidate_meta(candidate_id)["hash"] == digest:
                return candidate_id
        return None

    def next_candidate_id(self) -> str:
        """The next free ``cand_NNN`` id."""
        numbers = [int(c[5:]) for c in self.candidate_ids() if re.fullmatch(r"cand_\d+", c)]
        return f"cand_{max(numbers, default=0) + 1:03d}"

    def snapshot(self, candidate_id: str, src: Path | str, **fields: Any) -> dict[str, Any]:
        """Copy ``src`` into an immutable snapshot named ``candidate_id``.

        Snapshotting identical content under an existing id returns the existing record;
        different content under a taken id is a CandidateError.
        """
        src = Path(src).resolve()
        if not src.is_dir():
            raise CandidateError(f"candidate: {src} is not a directory")
        if not CANDIDATE_ID.match(candidate_id):
            raise CandidateError(f"candidate id {candidate_id!r}: use letters, digits, _ . -")
        digest = content_hash(src)
        meta_path = self.layout.candidate_meta(candidate_id)
        if meta_path.is_file():
            meta = jsonfiles.read(meta_path)
            if meta["hash"] != digest:
                raise CandidateError(f"candidate {candidate_id!r}: id taken by other content")
            return meta
        copy_readonly(src, self.layout.candidate_files(candidate_id))
        if content_hash(self.layout.candidate_files(candidate_id)) != digest:
            raise CandidateError(f"candidate: {src} changed while it was being copied")
        meta = {"id": candidate_id, "hash": digest, "source": str(src), "created_at": utc_now(),
                "files": file_digests(self.layout.candidate_files(candidate_id)), **fields}
        jsonfiles.write_atomic(meta_path, meta)
        self.log_event(EventKind.SNAPSHOT, candidate_id=candidate_id, hash=digest,
                       source=str(src))
        return meta
