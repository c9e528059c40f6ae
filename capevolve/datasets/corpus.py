"""Read a dataset project's JSONL file (one JSON object a line) into tasks; only the input,
expected and ``cluster`` fields reach a task.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from capevolve.adapter import Task
from capevolve.config import DatasetConfig
from capevolve.errors import ConfigError

MISSING = object()


def content_id(record: dict[str, Any]) -> str:
    """``d_`` + 12 hex digits of the record's canonical JSON sha256."""
    canonical = json.dumps(record, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return "d_" + hashlib.sha256(canonical.encode()).hexdigest()[:12]


def _record_id(record: dict[str, Any], field: str | None, where: str) -> str:
    if field is None:
        return content_id(record)
    value = record.get(field, MISSING)
    if isinstance(value, bool) or not isinstance(value, (str, int)) or value == "":
        raise ConfigError(f"{where}: id field {field!r} must be a non-empty string or "
                          f"integer, got {value if value is not MISSING else 'nothing'!r}")
    return str(value)


def read_records(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """(line number, object) of every non-blank line; ConfigError on a malformed one."""
    if not path.is_file():
        raise ConfigError(f"dataset.path: {path} does not exist")
    out = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}:{number}: not JSON ({exc.msg})") from None
        if not isinstance(value, dict):
            raise ConfigError(f"{path}:{number}: expected a JSON object, got "
                              f"{type(value).__name__}")
        out.append((number, value))
    if not out:
        raise ConfigError(f"{path}: the dataset has no datapoints")
    return out


def load_corpus(root: Path, config: DatasetConfig) -> list[Task]:
    """Every datapoint as a Task, in file order; ids unique."""
    path = (root / config.path).resolve()
    tasks: list[Task] = []
    seen: dict[str, int] = {}
    for number, record in read_records(path):
        where = f"{path}:{number}"
        task_id = _record_id(record, config.id, where)
        if task_id in seen:
            raise ConfigError(f"{where}: duplicate id {task_id!r} (first on line "
                              f"{seen[task_id]})")
        seen[task_id] = number
        if config.input not in record:
            raise ConfigError(f"{where}: no input field {config.input!r}")
        metadata: dict[str, Any] = {"id_source": "field" if config.id else "content",
                                    "line": number}
        if record.get("cluster") is not None:
            metadata["cluster"] = str(record["cluster"])
        expected = record.get(config.expected) if config.expected else None
        tasks.append(Task(id=task_id, input=record[config.input], target=expected,
                          metadata=metadata))
    return tasks


def has_ground_truth(value: Any) -> bool:
    """Whether an expected value can score anything (None, "", [] and {} cannot)."""
    if isinstance(value, str):
        return bool(value.strip())
    return bool(value) if isinstance(value, (list, dict, tuple)) else value is not None
