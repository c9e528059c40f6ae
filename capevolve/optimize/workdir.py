"""The prepared directory a proposer works in, and what its edit changed."""

from __future__ import annotations

import difflib
import json
import os
import shutil
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from capevolve._store.candidates import file_digests
from capevolve.records._optimize import DiffStat, IterationRecord

RULES = """\
## Rules
- Edit only the files under `candidate/` (this is a copy of the parent; the original is
  read-only). Keep the edit general: a rule, a fix, a clearer instruction.
- Never write a task id, a gold value or an expected answer into the capability: the loop
  measures on held-out tasks and such an edit is worthless there.
- Never touch a protected path (listed above): a child that adds, edits or removes one is
  refused before any rollout.
- Changing nothing is a valid answer when you see no general improvement.
"""


def _ledger_lines(ledger: Sequence[IterationRecord]) -> list[str]:
    lines = []
    for r in ledger:
        gate = r.gate
        numbers = (f" (val delta {gate.delta:+.3f}, se {gate.se:.3f})"
                   if gate and gate.delta is not None and gate.se is not None else "")
        what = r.detail.get("title") or r.focus or ", ".join(r.diff.modified + r.diff.added)
        lines.append(f"- iteration {r.iteration} on {r.parent_id}: {r.outcome}{numbers}"
                     f"{': ' + str(what) if what else ''}"
                     f"{' -- ' + '; '.join(r.reasons[:2]) if r.reasons else ''}")
    return lines


def instructions_text(*, parent_id: str, editable: Sequence[str], protected: Sequence[str],
                      stop_condition: str, focus: str | None,
                      ledger: Sequence[IterationRecord], has_diagnosis: bool) -> str:
    """The text of INSTRUCTIONS.md (also given to proposers as ``ctx.instructions``)."""
    parts = [f"# Improve candidate {parent_id}", "",
             "Edit the capability in `candidate/` so the agent scores better on unseen tasks.",
             "", "## Editable surface",
             *(f"- {e}" for e in (editable or ["every file under candidate/"])), "",
             "## Protected paths (never touch)", *(f"- `{p}`" for p in protected), "",
             f"## Stop condition\n{stop_condition or '(none)'}", "", RULES]
    if focus:
        parts += ["## Focus", f"Target this failure cluster first: {focus}", ""]
    parts += ["## Context",
              "- `context/diagnosis.json`: the parent's failures on the train split "
              "(reflective dataset and ranked clusters)" if has_diagnosis else
              "- no train diagnosis of the parent is available",
              "- `context/ledger.jsonl`: earlier iterations (do not retry rejected ideas "
              "as they were)",
              "- `context/trajectories.md`: where the parent's train rollouts are", ""]
    if ledger:
        parts += ["## Earlier iterations", *_ledger_lines(ledger), ""]
    return "\n".join(parts)


def _writable_copy(src: Path, dest: Path) -> None:
    shutil.copytree(src, dest, symlinks=False)
    for dirpath, _, filenames in os.walk(dest):
        os.chmod(dirpath, stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP)
        for name in filenames:
            os.chmod(Path(dirpath) / name, stat.S_IRUSR | stat.S_IWUSR | stat.S_IRGRP)


def prepare(work: Path, parent_files: Path, *, instructions: str,
            diagnosis: Mapping[str, Any] | None, ledger: Sequence[IterationRecord],
            trajectories: str) -> Path:
    """Make the prepared directory at ``work`` afresh; returns the writable candidate copy."""
    if work.exists():
        shutil.rmtree(work)
    context = work / "context"
    context.mkdir(parents=True)
    candidate = work / "candidate"
    _writable_copy(parent_files, candidate)
    (work / "INSTRUCTIONS.md").write_text(instructions, encoding="utf-8")
    if diagnosis is not None:
        (context / "diagnosis.json").write_text(json.dumps(diagnosis, indent=1, default=str),
                                                encoding="utf-8")
    (context / "ledger.jsonl").write_text(
        "".join(json.dumps(r.to_json()) + "\n" for r in ledger), encoding="utf-8")
    (context / "trajectories.md").write_text(trajectories, encoding="utf-8")
    return candidate


def _lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except (UnicodeDecodeError, OSError):
        return []


def diff_stat(parent: Path, child: Path) -> DiffStat:
    """What ``child`` changed relative to ``parent``, by content."""
    before, after = file_digests(parent), file_digests(child)
    added = sorted(set(after) - set(before))
    removed = sorted(set(before) - set(after))
    modified = sorted(p for p in set(before) & set(after) if before[p] != after[p])
    plus = minus = 0
    for rel in modified + added:
        old = _lines(parent / rel) if rel in before else []
        for line in difflib.unified_diff(old, _lines(child / rel), lineterm="", n=0):
            if line.startswith("+") and not line.startswith("+++"):
                plus += 1
            elif line.startswith("-") and not line.startswith("---"):
                minus += 1
    for rel in removed:
        minus += len(_lines(parent / rel))
    return DiffStat(added=tuple(added), modified=tuple(modified), removed=tuple(removed),
                    lines_added=plus, lines_removed=minus)
