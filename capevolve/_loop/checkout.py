"""``capevolve checkout``: a writable copy of a candidate (snapshots are read-only)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from capevolve._store.rundir import RunDir
from capevolve.errors import ConfigError


def checkout(run: RunDir, dest: Path, candidate_id: str | None = None) -> dict[str, Any]:
    """Copy ``candidate_id`` (default: the best) into ``dest``, absent or empty (else
    ConfigError); returns ``candidate_id``, ``path``, ``files``."""
    chosen = candidate_id or run.best_id
    source = run.candidate_dir(chosen)  # verified against its content hash
    dest = Path(dest)
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise ConfigError(f"{dest}: exists and is not an empty directory; checkout writes a "
                          "new copy (pick another path)")
    files: list[str] = []
    for folder, _, names in os.walk(source):
        rel_dir = Path(folder).relative_to(source)
        (dest / rel_dir).mkdir(parents=True, exist_ok=True)
        for name in sorted(names):
            shutil.copyfile(Path(folder) / name, dest / rel_dir / name)  # content only
            files.append((rel_dir / name).as_posix())
    return {"candidate_id": chosen, "path": str(dest.resolve()), "files": sorted(files)}
