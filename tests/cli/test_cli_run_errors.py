"""Bad input against a run dir: exit 2, one error line, and nothing stored is lost."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cli.cli_support import describe, invoke, one_json, stored, user_error


def _local(*args):
    return invoke(*args, "--engine", "local")


def test_evaluate_missing_candidate_dir(base_run, tmp_path):
    """evaluate of a candidate directory that does not exist names it; the run is unchanged."""
    before = stored(base_run.path)
    missing = tmp_path / "no_such_candidate"
    user_error(_local("evaluate", "--run-dir", base_run.path, "--candidate", missing, "--json"),
               str(missing), "neither a candidate id")
    assert stored(base_run.path) == before


@pytest.mark.parametrize("args", [
    ("gate", "--candidate", "cand_404"),
    ("accept", "--candidate", "cand_404"),
    ("reject", "--candidate", "cand_404"),
], ids=["gate", "accept", "reject"])
def test_unknown_candidate_id(base_run, args):
    """gate / accept / reject of an unknown candidate id exit 2 naming the id."""
    before = stored(base_run.path)
    message = user_error(invoke(*args, "--run-dir", base_run.path, "--json"), "'cand_404'")
    assert "no such candidate" in message or "no recorded gate" in message
    assert stored(base_run.path) == before


@pytest.mark.parametrize("command", [
    ("status",), ("report",), ("query", "SELECT 1"), ("gate", "--candidate", "seed"),
    ("accept", "--candidate", "seed"), ("reject", "--candidate", "seed"),
    ("evaluate", "--candidate", "seed", "--engine", "local"),
    ("finalize", "--engine", "local"),
], ids=lambda c: c[0])
def test_not_a_run_dir(toy_copy, tmp_path, command):
    """Every run-dir command on a directory that is not a run exits 2 naming it; nothing made."""
    for target in (toy_copy, tmp_path / "nowhere"):
        before = sorted(p.name for p in toy_copy.iterdir())
        result = invoke(command[0], "--run-dir", target, *command[1:], "--json")
        user_error(result, str(target.resolve()), "not a capevolve run dir", "run.json")
        assert sorted(p.name for p in toy_copy.iterdir()) == before
    assert not (tmp_path / "nowhere").exists()


@pytest.fixture
def run_copy(base_run, tmp_path) -> Path:
    """A private copy of the baseline run (for tests that damage it)."""
    dest = tmp_path / "run_copy"
    shutil.copytree(base_run.path, dest)
    return dest


def _edit_splits(run_dir: Path, fix_checksum: bool) -> None:
    path = run_dir / "splits.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    moved = data["val"].pop(0)
    data["train"].append(moved)
    if fix_checksum:
        from capevolve._store.splits import Splits

        data["checksum"] = Splits(tuple(data["train"]), tuple(data["val"]),
                                  tuple(data["test"]), data["seed"]).checksum()
    path.write_text(json.dumps(data), encoding="utf-8")


SPLIT_COMMANDS = [
    ("status",), ("report",), ("query", "SELECT count(*) FROM rollouts"),
    ("evaluate", "--candidate", "seed", "--split", "train", "--engine", "local"),
    ("gate", "--candidate", "seed"), ("reject", "--candidate", "seed"),
    ("finalize", "--engine", "local"),
]


@pytest.mark.parametrize("command", SPLIT_COMMANDS, ids=lambda c: c[0])
def test_hand_edited_splits(run_copy, command):
    """A hand edit of splits.json (a val id moved) is a checksum mismatch naming splits.json."""
    _edit_splits(run_copy, fix_checksum=False)
    before = stored(run_copy)
    user_error(invoke(command[0], "--run-dir", run_copy, *command[1:], "--json"),
               str(run_copy.resolve() / "splits.json"), "checksum mismatch")
    assert stored(run_copy) == before
    assert not (run_copy / "seal.json").exists()


def test_hand_edited_splits_with_new_checksum(run_copy):
    """Recomputing the checksum inside splits.json is still caught against run.json."""
    _edit_splits(run_copy, fix_checksum=True)
    before = stored(run_copy)
    user_error(invoke("status", "--run-dir", run_copy, "--json"), "splits.json", "run.json")
    user_error(_local("finalize", "--run-dir", run_copy, "--json"), "splits.json", "run.json")
    assert stored(run_copy) == before
    assert not (run_copy / "seal.json").exists()


@pytest.mark.parametrize(("split", "said"), [
    ("test", "the test split is held out and scored once, by `capevolve finalize`"),
    ("TEST", "the test split is held out"),
    ("holdout", "no such split; evaluate takes train or val"),
    ("validation", "no such split; evaluate takes train or val (did you mean val?)"),
    ("training", "(did you mean train?)"),
])
def test_evaluate_refuses_test_split(base_run, split, said):
    """evaluate --split test is refused as held out; a mistyped split is named as no split
    (with the one it looks like), never as the test split; nothing is stored either way."""
    before = stored(base_run.path)
    result = _local("evaluate", "--run-dir", base_run.path, "--candidate", "seed",
                    "--split", split, "--json")
    user_error(result, repr(split), said)
    assert split.lower() == "test" or "test" not in result.stderr
    assert stored(base_run.path) == before
    assert not (base_run.path / "rollouts" / "split=test").exists()


def test_second_finalize_is_refused(loop):
    """A second finalize exits 2 with a TestSealError about the seal; final.json is kept."""
    before = stored(loop.path)
    final = (loop.path / "final.json").read_bytes()
    message = user_error(_local("finalize", "--run-dir", loop.path, "--json"), "seal",
                         "already scored")
    assert "seal.json" in message
    assert stored(loop.path) == before
    assert (loop.path / "final.json").read_bytes() == final


@pytest.mark.slow
def test_accept_without_gate(fresh_run, toy_copy):
    """accept of an evaluated but never gated candidate is refused until a gate passes."""
    one_json(_local("evaluate", "--run-dir", fresh_run, "--candidate",
                    toy_copy / "improved_capability", "--json"))
    before = stored(fresh_run)
    user_error(invoke("accept", "--run-dir", fresh_run, "--candidate", "cand_001", "--json"),
               "accept refused", "'cand_001'", "no recorded gate", "'seed'")
    assert stored(fresh_run) == before
    assert one_json(invoke("status", "--run-dir", fresh_run, "--json"))["best_id"] == "seed"
    assert one_json(invoke("gate", "--run-dir", fresh_run, "--candidate", "cand_001",
                           "--json"))["decision"] == "accept"
    assert one_json(invoke("accept", "--run-dir", fresh_run, "--candidate", "cand_001",
                           "--json"))["best_id"] == "cand_001"


@pytest.mark.slow
def test_accept_ignores_an_evaluation_with_another_trial_count(fresh_run, toy_copy):
    """A val evaluation with another --n-trials after the passing gate is another draw the
    gate never compares: it neither licenses nor blocks the accept, and status shows the
    best's evaluation with the project's trial count."""
    r = ("--run-dir", fresh_run)
    one_json(_local("evaluate", *r, "--candidate", toy_copy / "improved_capability", "--json"))
    assert one_json(invoke("gate", *r, "--candidate", "cand_001", "--json"))["decision"] == "accept"
    one_json(_local("evaluate", *r, "--candidate", "cand_001", "--n-trials", "1", "--json"))
    assert one_json(invoke("accept", *r, "--candidate", "cand_001", "--json"))["best_id"] \
        == "cand_001"
    status = one_json(invoke("status", *r, "--json"))
    assert status["best_val"]["eval_id"] == "val__cand_001__k3"


@pytest.mark.slow
def test_accept_after_rejecting_gate(rejected_run):
    """accept after a gate that said reject is refused with the gate's reasons; best stays seed."""
    before = stored(rejected_run)
    message = user_error(invoke("accept", "--run-dir", rejected_run, "--candidate", "cand_001",
                                "--json"), "accept refused", "'cand_001'", "said reject")
    assert "min_delta" in message
    assert stored(rejected_run) == before
    status = one_json(invoke("status", "--run-dir", rejected_run, "--json"))
    assert status["best_id"] == "seed" and status["spent"]["iterations"] == 0


def test_candidate_identical_to_seed(base_run, seed_twin):
    """A candidate identical to the seed is the seed: no new draw, no gate, no accept."""
    before = stored(base_run.path)
    record = one_json(_local("evaluate", "--run-dir", base_run.path, "--candidate", seed_twin,
                             "--json"))
    assert record["candidate_id"] == "seed" and record["eval_id"] == "val__seed__k3"
    assert record["mean"] == base_run.handoff["baseline"]["mean"]
    assert stored(base_run.path) == before  # the complete evaluation was returned as it was
    user_error(invoke("gate", "--run-dir", base_run.path, "--candidate", "seed", "--json"),
               "'seed'", "already the best")
    user_error(invoke("accept", "--run-dir", base_run.path, "--candidate", "seed", "--json"),
               "accept refused", "'seed'", "already the best")
    user_error(invoke("reject", "--run-dir", base_run.path, "--candidate", "seed", "--json"),
               "reject refused", "'seed'", "current best")
    assert stored(base_run.path) == before


def test_gate_without_val_evaluation(base_run, tmp_path):
    """gate of a candidate with no val evaluation exits 2 and says which evaluate to run."""
    run = tmp_path / "run"
    shutil.copytree(base_run.path, run)
    cand = tmp_path / "cand"
    shutil.copytree(base_run.project / "improved_capability", cand)
    one_json(_local("evaluate", "--run-dir", run, "--candidate", cand, "--split", "train",
                    "--n-trials", "1", "--json"))
    before = stored(run)
    user_error(invoke("gate", "--run-dir", run, "--candidate", "cand_001", "--json"),
               "'cand_001'", "no complete evaluation", "--split val")
    assert stored(run) == before


def test_run_into_existing_run_dir(base_run):
    """run --run-dir on an existing run exits 2 and leaves that run as it was."""
    before = stored(base_run.path)
    user_error(_local("run", "--project", base_run.project, "--run-dir", base_run.path, "--json"),
               str(base_run.path), "already holds a run")
    assert stored(base_run.path) == before


def test_bad_query(base_run):
    """A query DuckDB rejects exits 2 with DuckDB's first line, not a traceback."""
    before = stored(base_run.path)
    user_error(invoke("query", "--run-dir", base_run.path, "SELECT nope FROM rollouts", "--json"),
               "query failed", "nope")
    assert stored(base_run.path) == before


@pytest.mark.parametrize("args, needles", [
    (("--current", "0.5", "--candidate", "abc", "--current-stderr", "0.02",
      "--candidate-stderr", "0.02"), ["'abc'", "must be a number"]),
    (("--current", "0.5", "--candidate", "0.6"), ["--current-stderr", "--candidate-stderr"]),
    (("--candidate", "cand_001"), ["--run-dir"]),
], ids=["not-a-number", "missing-stderr", "no-run-dir"])
def test_raw_gate_bad_input(args, needles):
    """The raw gate form rejects bad numbers and missing options with one error line."""
    user_error(invoke("gate", *args, "--json"), *needles)


def test_failed_commands_do_not_log(base_run, tmp_path):
    """A batch of refused commands on one run leaves events and rollout parts untouched."""
    before = stored(base_run.path)
    r = ("--run-dir", base_run.path)
    for args in (("evaluate", *r, "--candidate", tmp_path / "x", "--engine", "local"),
                 ("evaluate", *r, "--candidate", "seed", "--split", "test"),
                 ("gate", *r, "--candidate", "seed"), ("accept", *r, "--candidate", "seed"),
                 ("reject", *r, "--candidate", "seed"), ("query", *r, "SELEC")):
        result = invoke(*args, "--json")
        assert result.exit_code == 2, describe(result)
        assert stored(base_run.path) == before, args
