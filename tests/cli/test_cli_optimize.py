"""``capevolve optimize`` on the command line: bad input is one ``error:`` line, exit 2,
before any rollout and with nothing stored changed; a hand-edited ledger is refused by line;
the human output is the iteration table; status shows the loop."""

from __future__ import annotations

import json

import pytest
from cli.cli_support import invoke, stored, user_error
from fixtures.loops import loop_run, scripted_edits


@pytest.fixture
def run_and_edits(tmp_path):
    run = loop_run(tmp_path)
    return run, scripted_edits(tmp_path / "edits", [0.95, 0.2])


def _optimize(run, *args):
    return invoke("optimize", "--run-dir", str(run.root), "--engine", "local", *args)


@pytest.mark.slow
@pytest.mark.parametrize(("args", "needles"), [
    (["--algorithm", "tabu", "--proposer", "scripted:EDITS"], ["--algorithm 'tabu'"]),
    (["--algorithm", "pareto", "--proposer", "gpt:4"], ["unknown proposer kind 'gpt'"]),
    (["--algorithm", "pareto", "--proposer", "command:codex exec 'do it'"], ["{workdir}"]),
    (["--algorithm", "pareto"], ["--proposer are required"]),
    (["--algorithm", "pareto", "--proposer", "scripted:EDITS", "--iterations", "0"],
     ["--iterations 0"]),
    (["--resume"], ["no optimize loop to resume"]),
])
def test_bad_input_is_one_line_exit_2_before_any_rollout(run_and_edits, args, needles):
    run, edits = run_and_edits
    before = stored(run.root)
    result = _optimize(run, *[a.replace("EDITS", str(edits)) for a in args])
    user_error(result, *needles)
    assert stored(run.root) == before and not before.parts


def test_a_stop_condition_that_parses_to_nothing_exits_2(tmp_path):
    run = loop_run(tmp_path, extra='stop_condition: "whenever"\n')
    edits = scripted_edits(tmp_path / "edits", [0.9])
    user_error(_optimize(run, "--algorithm", "hill-climb", "--proposer", f"scripted:{edits}"),
               "parses to nothing", "whenever")
    check = invoke("check", "--project", str(tmp_path / "proj"))
    assert "NOT PARSED: 'whenever'" in check.stdout


@pytest.mark.slow
def test_the_table_then_a_hand_edited_ledger_is_refused_by_line(run_and_edits):
    run, edits = run_and_edits
    result = _optimize(run, "--algorithm", "hill-climb", "--proposer", f"scripted:{edits}")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert any(line.split()[:4] == ["1", "seed", "->", "cand_001"] and "accept" in line
               for line in lines)
    assert any("cand_002" in line and "screened_out" in line for line in lines)  # first look
    assert any(line.startswith("stopped: the proposer has nothing more") for line in lines)
    assert f"iteration 1: cand_001 (parent seed, scripted:{edits})" in result.stderr
    assert "-> accept" in result.stderr  # the live display's iteration rows, on stderr
    status = invoke("status", "--run-dir", str(run.root))
    assert "optimize loop (hill-climb" in status.stdout
    ledger = run.root / "optimize" / "ledger.jsonl"
    rows = ledger.read_text().splitlines()
    edited = json.loads(rows[0])
    edited["outcome"] = "promoted"
    ledger.write_text("\n".join([json.dumps(edited), *rows[1:]]) + "\n")
    user_error(_optimize(run, "--resume"), "ledger.jsonl:1", "outcome")
    user_error(invoke("status", "--run-dir", str(run.root)), "ledger.jsonl:1")
    ledger.write_text("\n".join([rows[1]]) + "\n")  # iteration 1 removed
    user_error(_optimize(run, "--resume"), "ledger.jsonl:1", "iteration 2 where 1")


def test_a_torn_last_ledger_line_is_skipped(tmp_path):
    from capevolve._store.iterations import LoopFiles
    from capevolve.records._optimize import IterationRecord

    files = LoopFiles(tmp_path)
    record = IterationRecord(iteration=1, algorithm="hill-climb", proposer="p",
                             parent_id="seed", outcome="no_change", started_at="t",
                             finished_at="t")
    files.append(record)
    with files.ledger.open("a") as fh:
        fh.write('{"iteration": 2, "algor')
    assert [r.iteration for r in files.read_ledger()] == [1]
    files.append(record.model_copy(update={"iteration": 2}))
    assert [r.iteration for r in files.read_ledger()] == [1, 2]
