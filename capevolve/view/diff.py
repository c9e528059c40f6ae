"""``diff A B``: the unified diff of two candidates' stored files, or its stat."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

from capevolve._store.rundir import RunDir

ADDED, REMOVED, MODIFIED = "added", "removed", "modified"


def _text(path: Path) -> list[str] | None:
    try:
        return path.read_text(encoding="utf-8").splitlines(keepends=True)
    except UnicodeDecodeError:
        return None


def diff(run: RunDir, a: str, b: str) -> dict[str, Any]:
    """Every file differing between ``a`` and ``b``: status, lines added and removed, diff
    (``binary`` when a side is not UTF-8)."""
    files_a, files_b = run.candidate_meta(a).files, run.candidate_meta(b).files
    root_a, root_b = run.candidate_dir(a), run.candidate_dir(b)
    changes = []
    for name in sorted(set(files_a) | set(files_b)):
        if files_a.get(name) == files_b.get(name):
            continue
        status = ADDED if name not in files_a else REMOVED if name not in files_b else MODIFIED
        old = [] if name not in files_a else _text(root_a / name)
        new = [] if name not in files_b else _text(root_b / name)
        lines = [] if old is None or new is None else list(
            difflib.unified_diff(old, new, f"{a}/{name}", f"{b}/{name}"))
        body = [line for line in lines[2:] if not line.startswith("@@")]
        changes.append({
            "path": name, "status": status, "binary": old is None or new is None,
            "added": sum(1 for line in body if line.startswith("+")),
            "removed": sum(1 for line in body if line.startswith("-")),
            "diff": "".join(line if line.endswith("\n") else line + "\n" for line in lines),
        })
    return {"a": a, "b": b, "files": changes,
            "files_changed": len(changes),
            "insertions": sum(c["added"] for c in changes),
            "deletions": sum(c["removed"] for c in changes)}


def stat_text(result: dict[str, Any]) -> str:
    """``git diff --stat``-like lines for a :func:`diff` result."""
    if not result["files"]:
        return f"{result['a']} and {result['b']} have identical files"
    width = max(len(c["path"]) for c in result["files"])
    lines = []
    for change in result["files"]:
        counts = ("binary" if change["binary"]
                  else f"+{change['added']} -{change['removed']}")
        lines.append(f" {change['path']:<{width}} | {counts} ({change['status']})")
    lines.append(f" {result['files_changed']} files changed, {result['insertions']} "
                 f"insertions(+), {result['deletions']} deletions(-)")
    return "\n".join(lines)
