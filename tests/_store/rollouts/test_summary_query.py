"""The summary's read of an evaluation's rows: every unit once, by the view's rule, in
(task, trial) order, whatever order and duplicates the parts hold."""

from __future__ import annotations

import datetime as dt
import random

import numpy as np
import pytest

from capevolve._loop.run import SEED_ID
from capevolve._store.rollouts.query import RolloutStore
from capevolve._store.rollouts.schema import SCHEMA_VERSION
from capevolve._store.rollouts.summary_query import read_eval_rows
from capevolve._store.rollouts.writer import write_part

T0 = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
EVAL = "val__seed__k4"
LOST = "score: JudgeUnavailable:"


def _row(task_id: str, trial: int, reward: float | None, error: str | None = None,
         finished_s: float = 0.0, eval_id: str = EVAL) -> dict:
    return {"schema_version": SCHEMA_VERSION, "run_id": "r", "eval_id": eval_id,
            "split": "val", "candidate_id": SEED_ID, "candidate_hash": "h",
            "task_id": task_id, "trial": trial, "seed": 7, "reward": reward,
            "error": error, "error_kind": "score" if error else None, "attempts": 1,
            "started_at": T0, "finished_at": T0 + dt.timedelta(seconds=finished_s)}


def _oracle(run) -> list[tuple]:
    """The view itself, sorted by DuckDB: (task, trial, reward or None, lost)."""
    _, rows = RolloutStore(run.layout).query(
        f"SELECT task_id, trial, reward, reward IS NULL AND coalesce(starts_with(error, "
        f"'{LOST}'), false) FROM rollouts WHERE eval_id = '{EVAL}' ORDER BY task_id, trial",
        EVAL)
    return [(t, int(k), r, bool(lost)) for t, k, r, lost in rows]


def _read(run) -> list[tuple]:
    rows = read_eval_rows(RolloutStore(run.layout), EVAL, LOST)
    names = tuple(rows.names.to_pylist())
    assert np.all(np.diff(rows.task) >= 0) and list(names) == sorted(names)
    return [(names[c], int(k), float(r) if s else None, bool(lost))
            for c, k, r, s, lost in zip(rows.task.tolist(), rows.trial.tolist(),
                                        rows.reward.tolist(), rows.scored.tolist(),
                                        rows.lost.tolist(), strict=True)]


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(6))
def test_rows_in_any_order_come_back_as_the_view_sorted(run, seed):
    """Trials written in descending and shuffled order, task ids that sort differently as
    text than as numbers (and one non-ASCII), errored and judge-lost units, rows of
    another evaluation in the same part: the read equals the view sorted by DuckDB."""
    rng = random.Random(seed)
    tasks = ["t10", "t9", "t1", "T2", "t\u00e9", "t_", "a"]
    rows = []
    for task in tasks:
        for trial in rng.sample(range(4), 4):
            kind = rng.random()
            rows.append(_row(task, trial, None, f"{LOST} down") if kind < 0.15 else
                        _row(task, trial, None, "score: boom") if kind < 0.3 else
                        _row(task, trial, rng.choice([0.0, 0.25, 1.0])))
        rows.append(_row(task, 0, 0.5, eval_id="val__seed__k9"))
    rng.shuffle(rows)
    directory = run.layout.partition("val", SEED_ID)
    write_part(rows[:13], directory / f"{EVAL}-a-00000.parquet")
    write_part(rows[13:], directory / f"{EVAL}-a-00001.parquet")
    assert _read(run) == _oracle(run)
    assert len(_read(run)) == len(tasks) * 4


def test_a_unit_stored_twice_is_read_once_by_the_views_rule(run):
    """A retried unit (errored first, scored later, in another part) and a unit stored
    twice with different rewards: the read keeps the row the ranking view keeps (the
    scored one, then the earliest finish), not the first one it meets."""
    directory = run.layout.partition("val", SEED_ID)
    write_part([_row("b", 1, None, "score: boom"), _row("a", 0, 0.25, finished_s=5),
                _row("b", 0, 1.0)], directory / f"{EVAL}-a-00000.parquet")
    write_part([_row("b", 1, 0.5, finished_s=9), _row("a", 0, 0.75, finished_s=1)],
               directory / f"{EVAL}-b-00000.parquet")
    got = _read(run)
    assert got == _oracle(run) == [("a", 0, 0.75, False), ("b", 0, 1.0, False),
                                   ("b", 1, 0.5, False)]


def test_no_part_reads_as_no_row(run):
    rows = read_eval_rows(RolloutStore(run.layout), EVAL, LOST)
    assert rows.n_rows == 0 and rows.names.to_pylist() == [] and not rows.has_duplicate_units()
