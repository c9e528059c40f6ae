"""`query` is read-only and confined to the run's rows: every attack of the confinement rule is
refused with one line (exit 2 from the CLI) and the run dir is byte-identical afterwards;
duplicate units resolve by one fixed rule, whatever order the parts were written in."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from fixtures.projects import make_candidate, make_project
from typer.testing import CliRunner

from capevolve._loop.evaluate import evaluate
from capevolve._loop.run import SEED_ID, create_run
from capevolve._store.rollouts.evalrows import eval_rows
from capevolve._store.rollouts.query import RolloutStore
from capevolve._store.rollouts.task_rows import task_rows
from capevolve._store.rollouts.writer import write_part
from capevolve.cli.app import app
from capevolve.errors import StoreError


def _tree(root: Path) -> dict[str, str]:
    """sha256 of every file under ``root`` (relative path -> digest)."""
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def scored_run(tmp_path_factory):
    """A run with the seed and a worse candidate scored on val."""
    base = tmp_path_factory.mktemp("confined")
    run = create_run(make_project(base / "p", 16, trials=2), base / "run")
    evaluate(run, SEED_ID, "val")
    evaluate(run, make_candidate(base / "worse", 0.1), "val")
    return run


def _attacks(run, outside: Path) -> dict[str, str]:
    part = min(run.layout.rollouts.rglob("*.parquet"))
    planted = part.with_name(part.name.replace("-", "-planted-", 1))
    return {
        "copy-plants-a-part": f"COPY (SELECT * REPLACE (1.0 AS reward) FROM rollouts) "
                              f"TO '{planted}' (FORMAT parquet)",
        "copy-over-a-part": f"COPY (SELECT * FROM rollouts LIMIT 1) TO '{part}' "
                            "(FORMAT parquet, USE_TMP_FILE false)",
        "copy-over-events": f"COPY (SELECT 'x' AS kind) TO '{run.layout.events}' (FORMAT csv)",
        "copy-over-run-json": f"COPY (SELECT 1 AS a) TO '{run.layout.run_json}' (FORMAT json)",
        "copy-outside": f"COPY (SELECT 1 AS a) TO '{outside / 'x.csv'}'",
        "read-passwd": "SELECT * FROM read_text('/etc/passwd')",
        "read-run-json": f"SELECT * FROM read_text('{run.layout.run_json}')",
        "read-csv-elsewhere": "SELECT * FROM read_csv('/etc/hostname')",
        "read-parquet-elsewhere": f"SELECT * FROM read_parquet('{outside}/*.parquet')",
        "glob-the-disk": "SELECT * FROM glob('/etc/*')",
        "attach": f"ATTACH '{outside / 'evil.db'}' AS evil",
        "install-httpfs": "INSTALL httpfs",
        "load-httpfs": "LOAD httpfs",
        "create": "CREATE TABLE t AS SELECT * FROM rollouts",
        "create-view-over": "CREATE OR REPLACE VIEW rollouts AS SELECT 1 AS reward",
        "insert": "INSERT INTO rollouts SELECT * FROM rollouts",
        "update": "UPDATE rollouts SET reward = 1",
        "delete": "DELETE FROM rollouts",
        "drop": "DROP VIEW rollouts",
        "pragma": "PRAGMA enable_external_access",
        "set-unlock": "SET enable_external_access = true",
        "set-paths": "SET allowed_directories = ['/']",
        "call": "CALL pragma_version()",
        "explain-copy": f"EXPLAIN ANALYZE COPY (SELECT 1) TO '{outside / 'y.csv'}'",
        "two-statements": f"SELECT 1; COPY (SELECT 1) TO '{planted}'",
        "comment-hidden": f"SELECT count(*) FROM rollouts -- harmless\n; COPY (SELECT 1 AS a) "
                          f"TO '{run.layout.events}'",
        "block-comment-hidden": f"SELECT 1 /* ; */ ; /* x */ ATTACH '{outside / 'e.db'}'",
        "empty": "   -- nothing\n",
        "nested-query-copy": f"SELECT * FROM query('COPY (SELECT 1 AS a) TO ''{part}'' "
                             "(FORMAT parquet, USE_TMP_FILE false)')",
        "read-blob": "SELECT * FROM read_blob('/etc/passwd')",
        "secrets": "SELECT * FROM duckdb_secrets()",
    }


ATTACK_NAMES = [
    "copy-plants-a-part", "copy-over-a-part", "copy-over-events", "copy-over-run-json",
    "copy-outside", "read-passwd", "read-run-json", "read-csv-elsewhere",
    "read-parquet-elsewhere", "glob-the-disk", "attach", "install-httpfs", "load-httpfs",
    "create", "create-view-over", "insert", "update", "delete", "drop", "pragma",
    "set-unlock", "set-paths", "call", "explain-copy", "two-statements", "comment-hidden",
    "block-comment-hidden", "empty", "nested-query-copy", "read-blob", "secrets",
]


@pytest.mark.slow
@pytest.mark.parametrize("attack", ATTACK_NAMES)
def test_attack_is_refused_and_the_run_is_untouched(scored_run, tmp_path, attack):
    """Each attack raises a one-line StoreError; nothing in or outside the run is written."""
    run = scored_run
    outside = tmp_path / "outside"
    outside.mkdir()
    sql = _attacks(run, outside)[attack]
    before = _tree(run.root)
    store = RolloutStore(run.layout)
    counts = store.query("SELECT eval_id, count(*), sum(reward) FROM rollouts "
                         "GROUP BY eval_id ORDER BY eval_id")
    with pytest.raises(StoreError) as caught:
        store.query(sql)
    message = str(caught.value)
    assert message and "\n" not in message, message
    assert _tree(run.root) == before
    assert list(outside.iterdir()) == []
    assert store.query("SELECT eval_id, count(*), sum(reward) FROM rollouts "
                       "GROUP BY eval_id ORDER BY eval_id") == counts


@pytest.mark.slow
@pytest.mark.parametrize("attack", ["copy-plants-a-part", "copy-over-events", "read-passwd",
                                    "attach", "install-httpfs", "comment-hidden"])
def test_cli_query_refuses_with_one_line_and_exit_2(scored_run, tmp_path, attack):
    """Through the CLI a refused query exits 2 with one error line and no traceback."""
    run = scored_run
    outside = tmp_path / "outside"
    outside.mkdir()
    before = _tree(run.root)
    result = CliRunner().invoke(app, ["query", "--run-dir", str(run.root),
                                      _attacks(run, outside)[attack], "--json"])
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in lines[0]
    assert _tree(run.root) == before and list(outside.iterdir()) == []


@pytest.mark.parametrize("sql", [
    "SELECT count(*) FROM rollouts",
    "WITH s AS (SELECT eval_id, task_id, trial FROM rollouts) SELECT count(*) FROM s",
    "FROM rollouts SELECT count(*)",
    "/* a comment */ SELECT count(*) FROM rollouts;",
])
def test_read_only_selects_still_work(scored_run, sql):
    """Ordinary analysis (WITH, FROM-first, comments, a trailing semicolon) still runs."""
    units = len(scored_run.splits.val) * 2 * 2  # tasks x trials x two candidates
    _, rows = RolloutStore(scored_run.layout).query(sql)
    assert rows == [(units,)]


def test_a_file_outside_the_partitions_is_not_read(scored_run, tmp_path):
    """A Parquet file dropped at the rollouts root (not in split=/candidate=) is ignored."""
    run = scored_run
    store = RolloutStore(run.layout)
    before = store.query("SELECT count(*), sum(reward) FROM rollouts")
    part = min(run.layout.rollouts.rglob("*.parquet"))
    stray = run.layout.rollouts / "stray.parquet"
    stray.write_bytes(part.read_bytes())
    try:
        assert store.query("SELECT count(*), sum(reward) FROM rollouts") == before
    finally:
        stray.unlink()


# -- duplicate units ------------------------------------------------------------------------

def _dup_run(tmp_path):
    run = create_run(make_project(tmp_path / "p", 8, trials=1), tmp_path / "run")
    record = evaluate(run, SEED_ID, "val")
    rows = [r for p in sorted(run.layout.rollouts.rglob("*.parquet"))
            for r in pq.read_table(p).to_pylist()]
    return run, record["eval_id"], rows


@pytest.mark.slow
@pytest.mark.parametrize("order", ["a-then-b", "b-then-a"])
def test_exact_duplicates_resolve_by_part_path_whatever_the_write_order(tmp_path, order):
    """Two rows for one unit with the same finished_at: the part whose path sorts first wins,
    whichever was written first (the rule is a total order, not file-system order)."""
    run, eval_id, rows = _dup_run(tmp_path)
    directory = run.layout.partition("val", SEED_ID)
    # the same units, same timestamps, opposite rewards, in two extra parts
    zero = [{**r, "reward": 0.0} for r in rows]
    one = [{**r, "reward": 1.0} for r in rows]
    first, second = directory / f"{eval_id}-0000aaaa-00000.parquet", \
        directory / f"{eval_id}-zzzzzzzz-00000.parquet"
    for path, data in ([(first, zero), (second, one)] if order == "a-then-b"
                       else [(second, one), (first, zero)]):
        write_part(data, path)
    for original in sorted(directory.glob(f"{eval_id}-*.parquet")):
        if original not in (first, second):
            original.unlink()  # leave only the two competing parts
    store, n = RolloutStore(run.layout), len(rows)
    assert n >= 2
    for scope in (None, eval_id):
        assert store.query("SELECT count(*), sum(reward) FROM rollouts", scope)[1] == [(n, 0.0)]
    assert all(v == [0.0] for v in task_rows(store.layout, eval_id).rewards().values())


def test_duplicates_within_one_part_resolve_to_the_first_row(tmp_path):
    """Two rows for one unit inside one part: the earlier row of the part wins, every time."""
    run, eval_id, rows = _dup_run(tmp_path)
    directory = run.layout.partition("val", SEED_ID)
    for original in directory.glob("*.parquet"):
        original.unlink()
    mixed = [{**r, "reward": 1.0} for r in rows] + [{**r, "reward": 0.0} for r in rows]
    write_part(mixed, directory / f"{eval_id}-mixed000-00000.parquet")
    sums = {RolloutStore(run.layout).query("SELECT sum(reward) FROM rollouts")[1][0][0]
            for _ in range(5)}
    assert sums == {float(len(rows))}


def test_a_scored_row_beats_an_errored_one_and_then_the_earliest(tmp_path):
    """An errored duplicate never hides a scored row; among scored ones the earliest wins."""
    run, eval_id, rows = _dup_run(tmp_path)
    directory = run.layout.partition("val", SEED_ID)
    early = [{**r, "reward": None, "error": "503",
              "finished_at": r["finished_at"] - dt.timedelta(hours=2)} for r in rows]
    late = [{**r, "reward": 0.25, "finished_at": r["finished_at"] + dt.timedelta(hours=1)}
            for r in rows]
    write_part(early, directory / f"{eval_id}-00000000-00000.parquet")
    write_part(late, directory / f"{eval_id}-00000001-00000.parquet")
    store = RolloutStore(run.layout)
    got = dict(store.query("SELECT task_id, reward FROM rollouts")[1])
    assert got == {r["task_id"]: r["reward"] for r in rows}
    assert json.dumps(sorted(got.items())) == json.dumps(
        sorted(dict(store.query("SELECT task_id, reward FROM rollouts", eval_id)[1]).items()))


def test_a_row_in_a_part_named_for_another_evaluation_is_ignored_everywhere(tmp_path):
    """Rows of eval A hidden in a part named for eval B (or in another candidate's partition)
    count in no view, so the per-evaluation and whole-run answers agree."""
    run, eval_id, rows = _dup_run(tmp_path)
    store = RolloutStore(run.layout)
    before = (store.query("SELECT count(*), sum(reward) FROM rollouts")[1],
              task_rows(store.layout, eval_id).rewards())
    forged = [{**r, "eval_id": "val__seed__k9", "reward": 1.0} for r in rows]
    write_part(forged, run.layout.partition("val", SEED_ID) / f"{eval_id}-forged00-00000.parquet")
    write_part([{**r, "reward": 1.0} for r in rows],
               run.layout.partition("val", "cand_999") / f"{eval_id}-forged01-00000.parquet")
    assert store.query("SELECT count(*), sum(reward) FROM rollouts")[1] == before[0]
    assert task_rows(store.layout, eval_id).rewards() == before[1]
    assert eval_rows(store.layout, "val__seed__k9").done_units() == set()


def test_the_public_query_verb_is_the_confined_one(scored_run):
    """capevolve.query (the root API) refuses a write like the store does."""
    import capevolve

    before = _tree(scored_run.root)
    with pytest.raises(StoreError, match="refused"):
        capevolve.query(scored_run.root, f"COPY (SELECT 1 AS a) TO '{scored_run.layout.events}'")
    assert capevolve.query(scored_run.root, "SELECT count(*) FROM rollouts")[1][0][0] > 0
    assert _tree(scored_run.root) == before
