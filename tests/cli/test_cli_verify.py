"""`capevolve verify` and `capevolve quarantine` on hand-forged run dirs, through the CLI."""

from __future__ import annotations

import hashlib
import json
import os

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from cli.cli_support import describe, invoke, no_traceback, one_json, user_error
from fixtures.projects import make_candidate, make_project

from capevolve._loop.evaluate import evaluate
from capevolve._loop.run import create_run
from capevolve._store.rundir import RunDir


@pytest.fixture
def run(tmp_path) -> RunDir:
    """A run whose seed and one candidate are evaluated on val."""
    run = create_run(make_project(tmp_path / "p", 16, quality=0.5, trials=2), tmp_path / "run")
    evaluate(run, "seed", "val")
    evaluate(run, make_candidate(tmp_path / "c", 0.4), "val")
    return run


def _status(run: RunDir):
    return invoke("status", "--run-dir", run.root, "--json")


@pytest.mark.slow
def test_verify_of_an_intact_run_says_ok(run):
    result = one_json(invoke("verify", "--run-dir", run.root, "--json"))
    assert result["ok"] and result["problems"] == [] and result["parts"] >= 2
    assert result["events"] == len(RunDir.open(run.root).events())
    text = invoke("verify", "--run-dir", run.root)
    assert text.exit_code == 0 and "ok: history and rows are as capevolve wrote them" \
        in text.stdout, describe(text)
    nothing = one_json(invoke("quarantine", "--run-dir", run.root, "--json"))
    assert nothing["problems"] == [] and nothing["ok"]


@pytest.mark.slow
def test_a_forged_part_is_refused_listed_and_quarantined(run):
    """A pyarrow-written part: status refuses it in one line (exit 2), verify lists it
    (exit 1), quarantine moves it aside and records that it did; the run then opens and
    the forged rows are gone."""
    real = min(run.layout.partition("val", "cand_001").glob("*.parquet"))
    table = pq.read_table(real)
    table = table.set_column(table.schema.get_field_index("reward"), "reward",
                             pc.add(pc.multiply(table["reward"], 0.0), 1.0))
    forged = real.with_name(real.name.replace("-0000", "-7777"))
    pq.write_table(table, forged)
    rel = forged.relative_to(run.root).as_posix()

    user_error(_status(run), rel, "not recorded in events.jsonl", "capevolve verify")
    listed = invoke("verify", "--run-dir", run.root, "--json")
    no_traceback(listed)
    report = one_json(listed, exit_code=1)
    assert report["lines"] == [f"{rel}: not recorded in events.jsonl: capevolve did not "
                               "write this part"]
    fixed = one_json(invoke("quarantine", "--run-dir", run.root, "--json"))
    assert fixed["ok"] and list(fixed["moved"]) == [rel] and fixed["left"] == []
    assert (run.root / fixed["moved"][rel]).is_file() and not forged.exists()
    status = one_json(_status(run))
    assert status["best_id"] == "seed"
    events = RunDir.open(run.root).events("quarantined")
    assert len(events) == 1 and events[0].moved == {rel: fixed["moved"][rel]}
    assert events[0].problems == report["lines"]


@pytest.mark.slow
def test_a_forged_event_is_cut_back_by_quarantine(run):
    """A chained set_best appended by hand: every command refuses it; quarantine cuts the
    log back to its last verified line (the whole log kept aside) and records it."""
    lines = run.layout.events.read_bytes().splitlines()
    forged = dict(json.loads(lines[2]), candidate_id="cand_001", reason="accepted",
                  prev=hashlib.sha256(lines[-1]).hexdigest())
    forged.pop("mac")
    with open(run.layout.events, "ab") as fh:
        fh.write(json.dumps(forged).encode() + b"\n")
    user_error(_status(run), f"events.jsonl:{len(lines) + 1}: forged")
    fixed = one_json(invoke("quarantine", "--run-dir", run.root, "--json"))
    assert fixed["ok"] and fixed["reset_events"], fixed
    kept = list(run.layout.quarantine().glob("*/events.jsonl"))
    assert len(kept) == 1 and kept[0].read_bytes().splitlines()[-1] == \
        json.dumps(forged).encode()
    now = run.layout.events.read_bytes().splitlines()
    assert now[:len(lines)] == lines and len(now) == len(lines) + 1  # + the quarantined event
    assert one_json(_status(run))["best_id"] == "seed"


@pytest.mark.slow
def test_a_corrupted_part_is_quarantined_and_its_units_run_again(run):
    """Bytes changed inside a real part: after quarantine the evaluation resumes exactly
    the units that part held and is complete again."""
    part = min(run.layout.partition("val", "seed").glob("*.parquet"))
    n_rows = pq.ParquetFile(part).metadata.num_rows
    with open(part, "r+b") as fh:
        fh.seek(os.path.getsize(part) // 2)
        fh.write(b"\0" * 64)
    user_error(_status(run), part.name, "sha256 differs")
    fixed = one_json(invoke("quarantine", "--run-dir", run.root, "--json"))
    assert fixed["ok"] and list(fixed["moved"]) == [part.relative_to(run.root).as_posix()]
    again = one_json(invoke("evaluate", "--run-dir", run.root, "--candidate", "seed",
                            "--split", "val", "--engine", "local", "--json"))
    assert again["status"] == "complete" and again["units_run"] == n_rows
    assert one_json(invoke("verify", "--run-dir", run.root, "--json"))["ok"]
