"""Apply one scripted edit (a JSON file in this folder) to a candidate directory.

Usage: ``python apply_edit.py EDIT.json CANDIDATE_DIR``. An edit is
``{"title", "why", "ops": [...]}``; each op names a ``file`` (relative to the candidate)
and one action: ``append`` (text added at the end), ``replace`` ([old, new], ``old`` must
occur exactly once) or ``copy_from`` (a file, relative to the edit, replacing it). Each edit
is a general rule or tool fix, never an answer to a specific task. Exits 1 with a one-line
message when an op cannot apply.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path


def apply_edit(edit_file: Path, candidate: Path) -> str:
    """Apply every op of ``edit_file`` to ``candidate``; returns the edit's title."""
    edit = json.loads(Path(edit_file).read_text(encoding="utf-8"))
    for op in edit["ops"]:
        target = Path(candidate) / op["file"]
        if "copy_from" in op:
            shutil.copyfile(Path(edit_file).parent / op["copy_from"], target)
            continue
        text = target.read_text(encoding="utf-8")
        if "append" in op:
            text = text + ("" if text.endswith("\n") else "\n") + op["append"]
        else:
            old, new = op["replace"]
            if text.count(old) != 1:
                raise ValueError(f"{op['file']}: the text to replace occurs "
                                 f"{text.count(old)} times, expected once")
            text = text.replace(old, new)
        target.write_text(text, encoding="utf-8")
    return edit["title"]


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: apply_edit.py EDIT.json CANDIDATE_DIR")
    try:
        print(apply_edit(Path(sys.argv[1]), Path(sys.argv[2])))
    except (OSError, ValueError, KeyError) as exc:
        sys.exit(f"apply_edit: {exc}")
