"""Trajectory files for failing rollouts without one of their own, under
``diagnoses/trajectories/<split>__<tag>/``: one folder per diagnosis, as trial 0 is a different
rollout for every candidate.
"""

from __future__ import annotations

import errno
import hashlib
import json
import math
import os
import re
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from json.encoder import encode_basestring
from pathlib import Path

from capevolve.diagnose.jsontext import SURROGATES, is_json
from capevolve.diagnose.source import Trial
from capevolve.errors import RunDirError

FOLDER = "trajectories"
WRITERS = 4  # threads creating files (the kernel's part runs outside the GIL)
CHUNK = 512  # files handed to a writer at a time
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def folder(diagnoses: Path, split: str, tag: str) -> Path:
    """The trajectory folder of one diagnosis."""
    return diagnoses / FOLDER / f"{split}__{tag}"


def file_name(trial: Trial) -> str:
    """``<task>__<trial>.json`` with a file-name-safe task id."""
    safe = _UNSAFE.sub("_", trial.task_id)
    if safe != trial.task_id or safe.startswith("."):
        safe = f"{safe}-{hashlib.sha256(trial.task_id.encode()).hexdigest()[:8]}"
    return f"{safe}__{trial.trial}.json"


def _json_text(text: str | None, valid: bool | None = None) -> str:
    """A JSON column as written: its stored text if JSON (``valid`` when known), else a JSON
    string."""
    if text is None:
        return "null"
    return text if (is_json(text) if valid is None else valid) else encode_basestring(text)


def _text(value: str | None) -> str:
    return "null" if value is None else encode_basestring(value)


def _plain(trial: Trial) -> str:
    """``json.dumps`` of the plain fields (sorted keys, no ASCII escaping, no NaN)."""
    reward, ids = trial.reward, (trial.eval_id, trial.task_id)
    if (type(trial.trial) is int and all(type(v) is str for v in ids)
            and all(v is None or type(v) is str for v in (trial.feedback, trial.output))
            and (reward is None or (type(reward) is float and math.isfinite(reward)))):
        return (f'{{"eval_id": {encode_basestring(trial.eval_id)}, '
                f'"feedback": {_text(trial.feedback)}, "output": {_text(trial.output)}, '
                f'"reward": {"null" if reward is None else float.__repr__(reward)}, '
                f'"task_id": {encode_basestring(trial.task_id)}, "trial": {trial.trial}}}')
    return json.dumps({"eval_id": trial.eval_id, "feedback": trial.feedback,
                       "output": trial.output, "reward": trial.reward,
                       "task_id": trial.task_id, "trial": trial.trial},
                      ensure_ascii=False, allow_nan=False, sort_keys=True)


def document(trial: Trial, valid: tuple[bool | None, bool | None, bool | None] | None = None
             ) -> str:
    """One trajectory file's JSON text; ``valid``: ``is_json`` of inputs, tool_calls and trace,
    where known."""
    plain = _plain(trial)
    inputs, calls, trace = valid or (None, None, None)
    return (f'{plain[:-1]}, "inputs": {_json_text(trial.inputs, inputs)}, '
            f'"tool_calls": {_json_text(trial.tool_calls, calls)}, '
            f'"trace": {_json_text(trial.trace, trace)}}}\n')


def _holds(path: str, data: bytes) -> bool:
    """Whether the regular file at ``path`` (never a symlink's target) holds ``data``."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
    except OSError:
        return False
    try:
        if os.fstat(fd).st_size != len(data):
            return False
        held = b""
        while len(held) < len(data) and (more := os.read(fd, len(data) - len(held))):
            held += more
        return held == data
    finally:
        os.close(fd)


def _write(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` unless it holds it; a symlink there is replaced, never
    followed."""
    if _holds(path, data):
        return  # a stored rollout never changes: most re-runs write nothing
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _NOFOLLOW
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        os.unlink(path)  # a symlink planted in the folder: drop the link, not its target
        fd = os.open(path, flags | os.O_EXCL, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def confined(directory: Path, root: Path) -> Path:
    """``directory`` if no existing step to it from ``root`` is a symlink or ``..``, else
    RunDirError."""
    try:
        relative = Path(os.path.abspath(directory)).relative_to(Path(os.path.abspath(root)))
    except ValueError:
        raise RunDirError(f"{directory}: not inside the run directory {root}") from None
    current = Path(os.path.abspath(root))
    for part in relative.parts:
        current = current / part
        if part == ".." or os.path.islink(current):
            raise RunDirError(f"{current}: a symlink (or ..) in the way out of the run "
                              f"directory {root}; diagnose writes only inside it (remove it "
                              "and rerun)")
        if not os.path.exists(current):
            break
    return directory


def _jobs(directory: Path, trials: list[Trial], names: set[str]
          ) -> Iterator[list[tuple[str, bytes]]]:
    chunk: list[tuple[str, bytes]] = []
    prefix = f"{directory}{os.sep}"
    inputs = {text: is_json(text) for text in {t.inputs for t in trials} if text is not None}
    for trial in trials:  # a task's trials share their input: it is checked once
        name = file_name(trial)
        names.add(name)
        valid = (trial.inputs is not None and inputs[trial.inputs], None, None)
        chunk.append((prefix + name, document(trial, valid).encode("utf-8", SURROGATES)))
        if len(chunk) >= CHUNK:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _write_chunk(chunk: list[tuple[str, bytes]]) -> None:
    for path, data in chunk:
        _write(path, data)


def write_all(directory: Path, trials: list[Trial], root: Path | None = None) -> None:
    """Write one file per trial in ``directory`` (confined to ``root`` when given) and drop
    stale ones."""
    if root is not None:
        confined(directory, root)
    directory.mkdir(parents=True, exist_ok=True)
    names: set[str] = set()
    with ThreadPoolExecutor(WRITERS, thread_name_prefix="trajectories") as pool:
        pending: deque[Future[None]] = deque()
        for chunk in _jobs(directory, trials, names):
            pending.append(pool.submit(_write_chunk, chunk))
            while len(pending) > 2 * WRITERS:
                pending.popleft().result()
        while pending:
            pending.popleft().result()
    with os.scandir(directory) as entries:  # as glob("*.json"): dot files are not listed
        stale = [e.path for e in entries if e.name.endswith(".json")
                 and e.name not in names and not e.name.startswith(".")]
    for path in stale:
        os.unlink(path)
