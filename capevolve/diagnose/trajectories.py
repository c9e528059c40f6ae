"""Trajectory files an editor can open, for adapters without a trace store of their own.

When the adapter has no ``trajectories(split)`` and a rollout has no trajectory path of its
own, diagnose writes each failing rollout to
``diagnoses/trajectories/<split>__<tag>/<task>__<trial>.json`` (one folder per diagnosis:
trial 0 of a task is a different rollout for every candidate) and points ``Trajectory``
there. The file holds the task id, trial, eval id, reward, feedback, input, final output,
tool calls and trace (the JSON columns as stored; one that is not valid JSON is kept as a
string). A task id with characters unsafe in a file name is written with them replaced by
``_`` and a short hash of the id appended, so two ids never share a file. Files of the
folder that the current diagnosis does not write are removed (stale rollouts). The files
are derived data: a file whose content is already right is left alone, any other is
rewritten in place without an fsync (a file torn by a crash is rewritten by the next
diagnose).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

from capevolve.diagnose.source import Trial

FOLDER = "trajectories"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def folder(diagnoses: Path, split: str, tag: str) -> Path:
    """The trajectory folder of one diagnosis."""
    return diagnoses / FOLDER / f"{split}__{tag}"


def file_name(trial: Trial) -> str:
    """``<task>__<trial>.json`` with a file-name-safe task id."""
    safe = _UNSAFE.sub("_", trial.task_id)
    if safe != trial.task_id or safe.startswith("."):
        safe = f"{safe}-{hashlib.sha256(trial.task_id.encode()).hexdigest()[:8]}"
    return f"{safe}__{trial.trial}.json"


def _json_text(text: str | None) -> str:
    """A JSON column as it goes into the file: the stored JSON text itself when it parses
    (no re-encoding), else the text as a JSON string."""
    if text is None:
        return "null"
    try:
        json.loads(text)
    except ValueError:
        return json.dumps(text, ensure_ascii=False)
    return text


def document(trial: Trial) -> str:
    """The JSON text of one trajectory file (module docstring): the plain fields in sorted
    order, then ``inputs``, ``tool_calls`` and ``trace``."""
    plain = json.dumps({"eval_id": trial.eval_id, "feedback": trial.feedback,
                        "output": trial.output, "reward": trial.reward,
                        "task_id": trial.task_id, "trial": trial.trial},
                       ensure_ascii=False, allow_nan=False, sort_keys=True)
    return (f'{plain[:-1]}, "inputs": {_json_text(trial.inputs)}, '
            f'"tool_calls": {_json_text(trial.tool_calls)}, '
            f'"trace": {_json_text(trial.trace)}}}\n')


def _holds(path: Path, data: bytes) -> bool:
    """Whether the file at ``path`` already holds exactly ``data``."""
    try:
        return os.path.getsize(path) == len(data) and path.read_bytes() == data
    except OSError:
        return False


def write_all(directory: Path, trials: list[Trial]) -> None:
    """Write one file per trial under ``directory`` and remove the folder's stale files."""
    directory.mkdir(parents=True, exist_ok=True)
    names = set()
    for trial in trials:
        name = file_name(trial)
        names.add(name)
        path, data = directory / name, document(trial).encode("utf-8")
        if _holds(path, data):
            continue  # a stored rollout never changes: most re-runs write nothing
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
    for stale in directory.glob("*.json"):
        if stale.name not in names:
            stale.unlink()
