"""verify and quarantine: what of a run is not as capevolve wrote it, and setting it aside.

Quarantine moves bad parts aside (their units run again), cuts the event log to its verified
lines and records one ``quarantined`` event; ``left`` lists what it cannot repair.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from capevolve._store import integrity
from capevolve._store.jsonfiles import write_bytes_atomic
from capevolve._store.rundir import RunDir, utc_now
from capevolve.errors import RunDirError
from capevolve.kinds import EventKind


def load(run_dir: Path | str) -> RunDir:
    """The run at ``run_dir``, unverified (run.json must be valid)."""
    run = RunDir(Path(run_dir))
    if not run.layout.run_json.is_file():
        raise RunDirError(f"{run.root}: not a capevolve run dir (no run.json)")
    run.manifest  # noqa: B018 - validates run.json
    return run


def verify_run(run_dir: Path | str) -> dict[str, Any]:
    """Every problem of the run, and what could not be checked."""
    run = load(run_dir)
    result = integrity.verify(run)
    return {"run_dir": str(run.root), **result.to_json(),
            "lines": [p.line() for p in result.problems]}


def quarantine_run(run_dir: Path | str) -> dict[str, Any]:
    """Set aside what verification refuses, and record it."""
    run = load(run_dir)
    with run.locked():
        found = integrity.verify(run)
        if found.ok:
            return {"run_dir": str(run.root), "moved": {}, "problems": [], "left": [],
                    "ok": True}
        stamp = utc_now().replace(":", "")
        aside = run.layout.quarantine() / stamp
        moved: dict[str, str] = {}
        left: list[str] = []
        reset = False
        history = [p for p in found.problems if p.kind in ("events", "head")]
        if history:  # the log first: parts are judged against the history that is kept
            reset = _cut_events(run, aside)
            found = integrity.verify(run) if reset else found
        for problem in found.problems:
            if problem.kind == "part_missing":
                moved[problem.path] = ""
            elif problem.kind in ("part_unrecorded", "part_changed"):
                moved[problem.path] = _move(run.root, problem.path, aside)
            elif problem.kind not in ("events", "head") or not reset:
                left.append(problem.line())
        problems = list(dict.fromkeys([p.line() for p in history]
                                      + [p.line() for p in found.problems]))
        if moved or reset:
            run.record(EventKind.QUARANTINED, moved=moved, reset_events=reset,
                        problems=problems)
        after = integrity.verify(run)
    return {"run_dir": str(run.root), "moved": moved, "reset_events": reset,
            "problems": problems, "left": list(dict.fromkeys(left)), "ok": after.ok,
            "remaining": [p.line() for p in after.problems]}


def _move(root: Path, rel: str, aside: Path) -> str:
    target = aside / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(root / rel, target)
    return target.relative_to(root).as_posix()


def _cut_events(run: RunDir, aside: Path) -> bool:
    """Cut events.jsonl to its verified lines, the file set aside; False (unchanged) without
    verified lines or the run's key."""
    log = run._log
    keep = log.verified_bytes
    if not log.verified() or log.key_id is None or log.unsigned is not None:
        return False
    aside.mkdir(parents=True, exist_ok=True)
    shutil.copy2(run.layout.events, aside / "events.jsonl")
    write_bytes_atomic(run.layout.events, run.layout.events.read_bytes()[:keep])
    run.forget_cached_events()
    run.events()  # reads the kept lines (and learns the key again)
    return True
