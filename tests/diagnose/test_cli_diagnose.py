"""The diagnose / census commands, mounted on a small Typer app the way app.py mounts them."""

from __future__ import annotations

import json

import pytest
import typer
from diagnose.diag_support import READ_CALLS, make_run, write_rows
from typer.testing import CliRunner

from capevolve.cli.diagnose_cmds import census_app, diagnose_app

app = typer.Typer()
app.add_typer(diagnose_app, name="diagnose")
app.add_typer(census_app, name="census")
ENV = {"CAPEVOLVE_RUN_DIR": None}


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args], env=ENV)


def one_json(result, code: int = 0) -> dict:
    assert result.exit_code == code, (result.stdout, result.stderr)
    lines = result.stdout.splitlines()
    assert len(lines) == 1, result.stdout
    return json.loads(lines[0])


@pytest.fixture
def run(tmp_path):
    """A run with one passing and two failing val tasks."""
    run = make_run(tmp_path)
    good, bad1, bad2 = run.splits.val[:3]
    write_rows(run, [
        {"task_id": good, "reward": 1.0, "feedback": "fine", "tool_calls": READ_CALLS},
        {"task_id": bad1, "reward": 0.0, "feedback": "refund amount off"},
        {"task_id": bad2, "reward": 0.5, "feedback": "refund amount off by 2"}])
    return run


def test_diagnose_json_prints_the_diagnosis_as_one_object(run):
    """capevolve diagnose --run-dir R --tag C --json: one JSON object, file written."""
    payload = one_json(invoke("diagnose", "--run-dir", run.root, "--split", "val",
                              "--tag", "seed", "--json"))
    assert payload["failing_total"] == 2 and payload["clusters"][0]["score_lost"] == 1.5
    assert (run.layout.diagnoses / "val__seed.json").is_file()


def test_diagnose_human_output_lists_clusters(run):
    """Without --json a summary with each cluster and the file path is printed."""
    result = invoke("diagnose", "--run-dir", run.root, "--tag", "seed",
                    "--cluster", "first-words")
    assert result.exit_code == 0, result.stderr
    assert "refund amount off" in result.stdout
    assert "val__seed.first-words.json" in result.stdout


def test_diagnose_refuses_the_test_split_and_missing_options(run):
    """--split test and a missing --tag are usage errors (exit 2), one line, no traceback."""
    refused = invoke("diagnose", "--run-dir", run.root, "--split", "test", "--tag", "seed")
    assert refused.exit_code == 2 and "held out" in refused.stderr
    missing = invoke("diagnose", "--run-dir", run.root)
    assert missing.exit_code == 2 and "--tag" in missing.stderr
    unknown = invoke("diagnose", "--run-dir", run.root, "--tag", "ghost")
    assert unknown.exit_code == 2 and "Traceback" not in unknown.stderr


def test_diagnose_annotate_subcommand_records_a_judgement(run):
    """capevolve diagnose annotate ... validates and writes the tag."""
    diag = one_json(invoke("diagnose", "-r", run.root, "--tag", "seed", "--json"))
    sig = diag["clusters"][0]["signature"]
    good = run.splits.val[0]
    ok = one_json(invoke("diagnose", "annotate", "--run-dir", run.root, "--file",
                         run.layout.diagnoses / "val__seed.json", "--cluster", sig,
                         "--tag", "CAPABILITY-GAP", "--blast-radius", good, "--json"))
    assert ok["tag"] == "CAPABILITY-GAP" and ok["blast_radius"] == [good]
    bad = invoke("diagnose", "annotate", "--run-dir", run.root, "--file",
                 run.layout.diagnoses / "val__seed.json", "--cluster", sig, "--tag", "NOPE")
    assert bad.exit_code == 2 and "unknown judgement tag" in bad.stderr


def test_census_export_then_check_through_the_cli(run, tmp_path):
    """export writes batches; check passes a consistent census and fails one over described."""
    out = tmp_path / "census"
    manifest = one_json(invoke("census", "export", "--run-dir", run.root, "--split", "val",
                               "--tag", "seed", "--batch-size", "8", "--out", out, "--json"))
    assert manifest["failing_total"] == 2 and (out / "batch_000.json").is_file()
    census_file = tmp_path / "census.json"
    doc = {"run_dir": str(run.root), "split": "val", "tag": "seed", "failing_total": 2,
           "described": 2, "buckets": [{"name": "money", "count": 2,
                                        "examples": [run.splits.val[1]]}]}
    census_file.write_text(json.dumps(doc))
    good = invoke("census", "check", census_file)
    assert good.exit_code == 0 and "2 of 2 failures described" in good.stdout
    doc["buckets"][0]["count"] = 3
    census_file.write_text(json.dumps(doc))
    over = one_json(invoke("census", "check", census_file, "--json"), code=1)
    assert not over["ok"] and any("more than described" in p for p in over["problems"])


def test_human_output_marks_a_tried_and_rejected_cluster(run, tmp_path):
    """A reject whose note targets the cluster shows up beside it in the summary."""
    from capevolve._loop.decide import reject
    from capevolve.kinds import Decision, EventKind

    src = tmp_path / "edit"
    src.mkdir()
    (src / "prompt.md").write_text("amounts in every reply")
    cid = run.snapshot("cand_x", src).id
    # reject takes only a gated candidate; this test is about the history it leaves
    run.record(EventKind.GATE, candidate_id=cid, best_id=run.best_id,
               decision=Decision.INDECISIVE, reasons=["not measured here"])
    reject(run, cid, note="cluster: refund amount; no gain")
    result = invoke("diagnose", "--run-dir", run.root, "--tag", "seed")
    assert result.exit_code == 0, result.stderr
    line = next(x for x in result.stdout.splitlines() if "refund amount" in x)
    assert line.endswith("(tried and rejected in iteration 1)")
