"""Candidate intake: snapshot a directory (or take an id) and verify it before paying.

Tampering with a protected file is refused and recorded as an indecisive gate: it is not
evidence about quality.
"""

from __future__ import annotations

from pathlib import Path

from capevolve._policy.protect import protected_changes, protected_patterns
from capevolve._store.candidates import content_hash
from capevolve._store.rundir import CANDIDATE_ID, RunDir
from capevolve.config import ProjectConfig
from capevolve.errors import CandidateError
from capevolve.kinds import Decision, EventKind


def candidate_source(run: RunDir, candidate: str | Path) -> Path:
    """The directory ``candidate`` names; CandidateError if it is in the run dir or holds it."""
    text = str(candidate)
    try:
        path = Path(text).resolve(strict=True) if text else None
    except (OSError, RuntimeError):
        path = None
    if path is None or not path.is_dir():
        raise CandidateError(f"candidate {text!r}: neither a candidate id of this run "
                             "nor an existing directory")
    root = run.root.resolve()
    if path == root or root in path.parents:
        raise CandidateError(f"candidate {text!r}: {path} is inside the run dir; name a "
                             "snapshot by its id (seed, cand_001 ...)")
    if path in root.parents:
        raise CandidateError(f"candidate {text!r}: {path} holds the run dir; give the "
                             "capability directory itself")
    return path


def resolve_candidate(run: RunDir, candidate: str | Path) -> str:
    """A candidate id, or a directory to snapshot (identical content reuses a snapshot)."""
    text = str(candidate)
    if CANDIDATE_ID.match(text) and run.layout.candidate_meta(text).is_file():
        return text
    path = candidate_source(run, candidate)
    existing = run.find_candidate(content_hash(path))
    if existing:
        return existing
    return run.snapshot(run.next_candidate_id(), path).id


def refuse_tampering(run: RunDir, config: ProjectConfig, candidate_id: str) -> None:
    """CandidateError (after an indecisive gate) when a protected file differs from the seed's."""
    if candidate_id == "seed":
        return
    patterns = protected_patterns(config.protected_paths)
    changed = protected_changes(run.candidate_meta("seed").files,
                                run.candidate_meta(candidate_id).files, patterns)
    if changed:
        run.record(EventKind.TAMPER, candidate_id=candidate_id, paths=changed)
        run.record(EventKind.GATE, candidate_id=candidate_id, best_id=run.best_id,
                    decision=Decision.INDECISIVE,
                    reasons=[f"tampering: protected paths changed: {', '.join(changed)}"])
        raise CandidateError(f"candidate {candidate_id!r} changes protected paths: "
                             f"{', '.join(changed[:10])}; refused before any rollout")


