"""A DuckDB database made ahead serves the next query exactly as a new one would: the
same answer, the same confinement, and it is made at most once per query."""

from __future__ import annotations

import duckdb
import pytest
from fixtures.projects import make_project

from capevolve._loop.evaluate import evaluate
from capevolve._loop.run import SEED_ID, create_run
from capevolve._store.rollouts import spare
from capevolve._store.rollouts.query import RolloutStore
from capevolve.errors import StoreError

COUNT = "SELECT eval_id, count(*), sum(reward) FROM rollouts GROUP BY eval_id ORDER BY 1"


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    base = tmp_path_factory.mktemp("spare")
    run = create_run(make_project(base / "p", 10, trials=2), base / "run")
    evaluate(run, SEED_ID, "val")
    return run


def test_the_next_connect_takes_the_database_made_ahead(scored, monkeypatch):
    """make_ahead, then a query: the query runs on that database (no other is made) and
    answers as a query on a new one; the one after makes its own again."""
    store = RolloutStore(scored.layout)
    plain = store.query(COUNT)
    spare.make_ahead()
    made = spare.take()
    assert made is not None
    spare._made.append(made)
    opened = []
    real = duckdb.connect
    monkeypatch.setattr(duckdb, "connect", lambda *a, **k: opened.append(1) or real(*a, **k))
    assert store.query(COUNT) == plain and opened == []  # served by the one made ahead
    assert spare.take() is None
    assert store.query(COUNT) == plain and opened == [1]


@pytest.mark.parametrize("sql", [
    "SELECT * FROM read_text('/etc/passwd')",
    "SET enable_external_access = true",
    "COPY (SELECT 1 AS a) TO '/tmp/capevolve-spare-escape.csv'",
    "SELECT * FROM glob('/etc/*')",
])
def test_a_database_made_ahead_is_confined_like_any_other(scored, sql):
    """The confinement is applied when the database is taken: reads outside the run,
    writes and setting changes are refused on it too."""
    spare.make_ahead()
    with pytest.raises(StoreError):
        RolloutStore(scored.layout).query(sql)
    assert spare.take() is None  # the refused query used it


def test_without_make_ahead_there_is_nothing_to_take():
    assert spare.take() is None
    spare.make_ahead()
    spare.make_ahead()  # one at a time
    first, second = spare.take(), spare.take()
    assert first is not None and second is None
    first.close()


EXIT_RIGHT_AFTER = """
import duckdb
from capevolve._store.rollouts import spare
spare.make_ahead()
"""


@pytest.mark.parametrize("runs", [
    2, pytest.param(20, marks=pytest.mark.slow, id="20-runs")])
def test_a_process_that_exits_while_a_database_is_being_made_does_not_abort(runs):
    """The exit waits for the maker thread: a daemon thread unwound by force inside
    duckdb.connect aborted the process (rc 134, "terminate called without an active
    exception") every time before."""
    import subprocess
    import sys

    for _ in range(runs):
        done = subprocess.run([sys.executable, "-c", EXIT_RIGHT_AFTER], capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert "terminate called" not in done.stderr
