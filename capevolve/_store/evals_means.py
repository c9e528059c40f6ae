"""Per-task means of an evaluation: a Parquet file beside its record, checked on each read."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from capevolve._store.durable import fsync_dir
from capevolve._store.evals import Where, _layout
from capevolve._store.jsonfiles import write_bytes_atomic
from capevolve._store.rundir import RunDir
from capevolve.errors import RunDirError
from capevolve.records import EvalRecord, TaskMeansFile

if TYPE_CHECKING:  # Arrow is imported only when a means file is written or read: the
    import numpy as np  # commands that never read means (status) stay light
    import pyarrow as pa


def schema() -> pa.Schema:
    """The columns of a means file."""
    import pyarrow as pa

    return pa.schema([pa.field("task_id", pa.string(), nullable=False),
                      pa.field("mean", pa.float64(), nullable=False),
                      pa.field("n", pa.int64(), nullable=False)])


def means_name(eval_id: str) -> str:
    """The means file's name in evals/."""
    return f"{eval_id}.means.parquet"


def encode(tasks: Sequence[str] | pa.Array, means: np.ndarray, counts: np.ndarray) -> bytes:
    """Parquet bytes of sorted ``tasks`` with a mean and count each (built without pandas)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from capevolve._store.rollouts.arrow_numpy import float64_array, int64_array, string_array

    names = tasks.cast(pa.string()) if isinstance(tasks, pa.Array) \
        else string_array(list(tasks))
    table = pa.Table.from_arrays([names, float64_array(means), int64_array(counts)],
                                 schema=schema())
    sink = pa.BufferOutputStream()
    # sorted distinct task ids delta-encode smaller than a dictionary; means and counts
    # take few values and keep theirs
    pq.write_table(table, sink, compression="zstd", write_statistics=False,
                   use_dictionary=["mean", "n"],
                   column_encoding={"task_id": "DELTA_BYTE_ARRAY"})
    return sink.getvalue().to_pybytes()


def write_task_means(where: Where, eval_id: str, tasks: Sequence[str] | pa.Array,
                     means: np.ndarray, counts: np.ndarray) -> TaskMeansFile:
    """Write ``eval_id``'s means file durably; return its reference. The record comes after."""
    from capevolve._store.rollouts import arrowpool  # Arrow: only when a file is written

    data = encode(tasks, means, counts)
    arrowpool.release_unused()  # what the Parquet writer's buffers freed
    layout = _layout(where)
    path = layout.evals / means_name(eval_id)
    path.parent.mkdir(parents=True, exist_ok=True)

    if isinstance(where, RunDir):  # one of the run's own writes (a guard's expected bytes)
        where.write_own_bytes(path, data)
    else:
        write_bytes_atomic(path, data)
    fsync_dir(path.parent)
    return TaskMeansFile(name=path.name, sha256=hashlib.sha256(data).hexdigest(),
                         size=len(data), n_tasks=len(means))


def task_means_of(where: Where, record: EvalRecord | Mapping[str, Any]) -> dict[str, float]:
    """A record's per-task means, from its verified means file or inline; else RunDirError."""
    if isinstance(record, EvalRecord):
        ref, inline, eval_id = record.task_means_file, record.task_means, record.eval_id
    else:
        raw = record.get("task_means_file")
        ref = TaskMeansFile.model_validate(raw) if raw is not None else None
        inline, eval_id = record.get("task_means") or {}, str(record.get("eval_id"))
    if ref is None:
        return dict(inline)
    return read_task_means(where, eval_id, ref)


def read_task_means(where: Where, eval_id: str, ref: TaskMeansFile) -> dict[str, float]:
    """The means file ``ref``, checked by name, size, sha256, schema and rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = _layout(where).evals / ref.name
    if ref.name != means_name(eval_id):
        raise RunDirError(f"{_layout(where).eval_json(eval_id)}: names means file "
                          f"{ref.name!r}, not {means_name(eval_id)!r}")
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise RunDirError(f"{path}: missing (the per-task means of evaluation "
                          f"{eval_id})") from None
    except OSError as exc:
        raise RunDirError(f"{path}: unreadable ({exc.strerror or exc})") from None
    if len(data) != ref.size or hashlib.sha256(data).hexdigest() != ref.sha256:
        raise RunDirError(f"{path}: does not match the sha256 its evaluation record "
                          f"{eval_id} holds (edited, swapped or truncated)")
    try:
        table = pq.read_table(pa.BufferReader(data))
    except (pa.ArrowException, OSError) as exc:
        raise RunDirError(f"{path}: unreadable means file ({exc})") from None
    if not table.schema.equals(schema(), check_metadata=False) or table.num_rows != ref.n_tasks:
        raise RunDirError(f"{path}: not the means file its evaluation record describes "
                          f"(columns or {ref.n_tasks} rows)")
    return dict(zip(table.column("task_id").to_pylist(), table.column("mean").to_pylist(),
                    strict=True))


def with_task_means(where: Where, record: EvalRecord | Mapping[str, Any]) -> dict[str, Any]:
    """``record``'s JSON form with ``task_means`` read in."""
    data = record.to_json() if isinstance(record, EvalRecord) else dict(record)
    return {**data, "task_means": task_means_of(where, record)}
