"""A DuckDB database made ahead serves the next query exactly as a new one would: the
same answer, the same confinement, and it is made at most once per query."""

from __future__ import annotations

import subprocess
import sys

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


EXIT_WHILE_MAKING = """
import sys, time
import duckdb  # imported already: the exit then falls inside connect, the narrow window
from capevolve._store.rollouts import spare
spare.make_ahead()
time.sleep(float(sys.argv[1]))
sys.exit(2)
"""


@pytest.mark.slow
def test_a_process_that_exits_while_a_database_is_made_ahead_exits_cleanly(tmp_path):
    """A refused evaluation raises right after making a database ahead: the process must
    end with its own status, never abort natively (status 134, "FATAL: exception not
    rethrown") while the maker thread is inside DuckDB's import or connect."""
    script = tmp_path / "exit_while_making.py"
    script.write_text(EXIT_WHILE_MAKING)
    for delay in ("0", "0.001", "0.002", "0.004", "0.006", "0.008", "0.01", "0.012", "0.014",
                  "0.016", "0.02", "0.03"):
        done = subprocess.run([sys.executable, str(script), delay], capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == 2, (delay, done.returncode, done.stderr[-500:])
        assert "FATAL" not in done.stderr and "terminate called" not in done.stderr
