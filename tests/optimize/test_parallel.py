"""--parallel K: the K evaluations of a batch run at once through one engine and leave the
rows, records and decisions of a sequential loop; budget caps hold across them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from fixtures.loops import events, ledger, loop_run, scripted_edits
from fixtures.projects import clean_env

import capevolve
from capevolve.errors import RunDirError

# all below the seed's 0.5 but the last: every child's parent is the seed in a sequential
# loop as in a parallel one, so the two must agree row for row
QUALITIES = [0.2, 0.3, 0.25, 0.35, 0.15, 0.95]
ROW_COLUMNS = ["eval_id", "candidate_id", "candidate_hash", "task_id", "trial", "seed",
               "reward", "feedback", "output", "error", "error_kind"]
EVAL_FIELDS = ["status", "mean", "stderr", "n_rows", "n_scored", "task_means", "run_means",
               "pass_k", "coverage", "candidate_hash", "units_run"]


def _rows(run_root: Path) -> dict[tuple, dict]:
    found = {}
    for part in sorted((run_root / "rollouts").rglob("*.parquet")):
        for row in pq.read_table(part, columns=ROW_COLUMNS).to_pylist():
            key = (row["eval_id"], row["task_id"], row["trial"])
            assert key not in found, f"unit stored twice: {key}"
            found[key] = row
    return found


def _evals(run_root: Path) -> dict[str, dict]:
    out = {}
    for path in sorted((run_root / "evals").glob("*.json")):
        data = json.loads(path.read_text())
        out[data["eval_id"]] = {k: data.get(k) for k in EVAL_FIELDS}
    return out


def _decisions(run_root: Path) -> list[tuple]:
    gates = [(g["candidate_id"], g["best_id"], g["decision"], g["delta"], g["se"])
             for g in events(run_root, "gate")]
    made = [(e["kind"], e["candidate_id"]) for e in events(run_root)
            if e["kind"] in ("accept", "reject", "set_best")]
    return [*sorted(gates), *made]


def _loop(tmp_path: Path, parallel: int) -> tuple[Path, dict]:
    run = loop_run(tmp_path, sleep=0.2)  # rollouts long enough to overlap despite start-up
    edits = scripted_edits(tmp_path / "edits", QUALITIES)
    result = capevolve.optimize_run(run.root, algorithm="hill-climb",
                                    proposer=f"scripted:{edits}", iterations=len(QUALITIES),
                                    parallel=parallel, engine="local").to_dict()
    return run.root, result


def _overlapped(run_root: Path, a: str, b: str) -> bool:
    """Both evaluations were under way at once: each started before the other finished
    (the order of their events in the log, not a timing)."""
    order = [(e["kind"], e["eval_id"]) for e in events(run_root)
             if e["kind"] in ("eval_started", "eval_finished") and e["eval_id"] in (a, b)]
    return (order.index(("eval_started", b)) < order.index(("eval_finished", a))
            and order.index(("eval_started", a)) < order.index(("eval_finished", b)))


@pytest.fixture(scope="module")
def sequential(tmp_path_factory):
    return _loop(tmp_path_factory.mktemp("sequential"), 1)


@pytest.mark.slow
@pytest.mark.parametrize("k", [2, 3])
def test_a_parallel_batch_leaves_the_rows_records_and_decisions_of_a_sequential_loop(
        tmp_path, sequential, k):
    seq_root, seq = sequential
    par_root, par = _loop(tmp_path, k)
    assert [(r["iteration"], r["parent"], r["child"], r["outcome"], r["val_child"],
             r["delta"], r["se"], r["metric_calls"]) for r in par["iterations"]] == \
        [(r["iteration"], r["parent"], r["child"], r["outcome"], r["val_child"],
          r["delta"], r["se"], r["metric_calls"]) for r in seq["iterations"]]
    assert par["best_id"] == seq["best_id"] == "cand_006"
    assert _rows(par_root) == _rows(seq_root)
    assert _evals(par_root) == _evals(seq_root)
    assert _decisions(par_root) == _decisions(seq_root)
    assert [r["iteration"] for r in ledger(par_root)] == list(range(1, 7))
    # the batch's evaluations really ran at once
    assert _overlapped(par_root, "val__cand_001__k2", "val__cand_002__k2")
    # every evaluation is complete (or a child stopped at its first look: 6 tasks x 1
    # trial) and nothing was voided as foreign writes
    assert all(e["status"] == "complete" or e["n_rows"] == e["units_run"] == 6
               for e in _evals(par_root).values())
    assert not (par_root / "quarantine").exists()
    assert capevolve.verify(par_root).ok  # the chain, the parts and their records agree


@pytest.mark.slow
def test_concurrent_evaluations_together_never_pass_the_metric_call_cap(tmp_path):
    """Three children of 12 units each with 18 units of budget left: each alone would fit
    in the room a per-evaluation allowance sees; together they may not pass the cap."""
    run = loop_run(tmp_path, sleep=0.05, extra='stop_condition: "12 iterations"\n'
                   "budget: {max_metric_calls: 30}\n")
    edits = scripted_edits(tmp_path / "edits", [0.2, 0.3, 0.25])
    result = capevolve.optimize_run(run.root, algorithm="hill-climb", proposer=f"scripted:{edits}",
                                parallel=3, engine="local").to_dict()
    units = _rows(run.root)
    status = capevolve.status(run.root)
    assert status.spent.metric_calls <= 30
    assert len(units) <= 30
    assert len(units) >= 24  # the cap, not a lack of work, stopped them
    assert "budget" in result["stop_reason"] or "max_metric_calls" in result["stop_reason"]
    by_eval = Counter(e for e, _, _ in units)
    assert by_eval["val__seed__k2"] == 12
    children = [e for e in by_eval if e != "val__seed__k2"]
    assert len(children) >= 2  # more than one child ran under the shared allowance


CAPEVOLVE = Path(sys.executable).with_name("capevolve")


def _cmd(run_root: Path, *args: str) -> list[str]:
    return [str(CAPEVOLVE), "optimize", "--run-dir", str(run_root), "--engine", "local",
            "--json", *args]


def _rows_started(run_root: Path) -> int:
    return sum(pq.ParquetFile(p).metadata.num_rows
               for p in (run_root / "rollouts").rglob("*.parquet"))


@pytest.mark.slow
@pytest.mark.parametrize("after_rows", [18, 30])
def test_kill_9_in_the_middle_of_a_parallel_batch_then_resume_pays_and_counts_nothing_twice(
        tmp_path, after_rows):
    """SIGKILL while the batch's evaluations run (the baseline's 12 rows, then some of the
    children's), then --resume: the loop of an uninterrupted parallel run."""
    ref_root, reference = _loop(tmp_path / "reference", 3)
    run = loop_run(tmp_path / "killed", sleep=0.2)
    edits = scripted_edits(tmp_path / "killed" / "edits", QUALITIES)
    args = ["--algorithm", "hill-climb", "--proposer", f"scripted:{edits}",
            "--iterations", str(len(QUALITIES)), "--parallel", "3"]
    proc = subprocess.Popen(_cmd(run.root, *args), env=clean_env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 180
    while _rows_started(run.root) < after_rows and proc.poll() is None:
        assert time.monotonic() < deadline, "the loop never reached the kill point"
        time.sleep(0.005)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert len(ledger(run.root)) < len(QUALITIES), "killed too late: the loop had finished"
    out = subprocess.run(_cmd(run.root, "--resume"), env=clean_env(), capture_output=True,
                         text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert [(r["iteration"], r["child"], r["outcome"]) for r in result["iterations"]] == \
        [(r["iteration"], r["child"], r["outcome"]) for r in reference["iterations"]]
    assert _rows(run.root) == _rows(ref_root)  # no unit stored twice (checked), none lost
    assert _decisions(run.root) == _decisions(ref_root)  # one gate and decision per child
    assert [r["iteration"] for r in ledger(run.root)] == list(range(1, len(QUALITIES) + 1))
    # every unit dispatched is paid once: the rows, plus the units the kill left in flight
    spent = capevolve.status(run.root).spent.metric_calls
    assert len(_rows(run.root)) <= spent <= len(_rows(run.root)) + 3 * 8
    assert not list((run.root / "optimize" / "pending").glob("*.json"))


PLANTER = '''
import shutil, time
from pathlib import Path
from capevolve import Rollout, Score, Task


class PlantingAdapter:
    """A candidate with plant.txt (run dir, victim eval id) copies a part of the victim's
    evaluation under the victim's own session name while both run."""

    def tasks(self):
        return [Task(id=f"t{i:02d}", input={}) for i in range(24)]

    def run_target(self, candidate, task, *, trial, seed):
        time.sleep(0.03)
        plant = Path(candidate) / "plant.txt"
        if plant.is_file() and trial == 0:
            root, victim = plant.read_text().split()
            deadline = time.monotonic() + 4
            while time.monotonic() < deadline:
                parts = sorted(Path(root, "rollouts").rglob(victim + "-*.parquet"))
                if parts:
                    token = parts[0].name[len(victim) + 1:].split("-")[0]
                    shutil.copy(parts[0], parts[0].with_name(f"{victim}-{token}-99999.parquet"))
                    break
                time.sleep(0.01)
        return Rollout(output="ok" if (seed % 2) else "no", tokens=1)

    def score(self, task, rollout):
        return Score(reward=1.0 if rollout.output == "ok" else 0.0, feedback="")
'''


@pytest.mark.slow
def test_a_part_planted_under_a_concurrent_evaluations_name_is_caught(tmp_path):
    """Candidate code of one child forges a part of the other child's evaluation, named
    with that evaluation's live session: the forged rows never count (the file is moved to
    quarantine and an evaluation that saw it is refused), whichever guard meets it. The
    project opts out of the sandbox (``isolation: none``), which hides the run dir from
    candidate code: the guards behind it are what this checks."""
    project = tmp_path / "proj"
    (project / "seed").mkdir(parents=True)
    (project / "adapter.py").write_text(PLANTER)
    (project / "seed" / "notes.md").write_text("seed\n")
    (project / "capevolve.yaml").write_text(
        "name: planter\nadapter: adapter.py:PlantingAdapter\ncapability_path: seed\n"
        "splits: {train: 0.5, val: 0.25, test: 0.25, seed: 0}\nnum_trials: 2\n"
        "engine: {kind: local, concurrency: 4, timeout_s: 20, retries: 0, isolation: none}\n"
        'stop_condition: "4 iterations"\n')
    run = capevolve.create_run(project, tmp_path / "run")
    edits = scripted_edits(tmp_path / "edits", [
        {"plant.txt": f"{run.root} val__cand_002__k2\n"}, {"notes.md": "other\n"}])
    with pytest.raises(RunDirError, match="refused: .*-99999.parquet was written during"):
        capevolve.optimize_run(run.root, algorithm="hill-climb", iterations=2, parallel=2,
                           proposer=f"scripted:{edits}", engine="local")
    assert not list((run.root / "rollouts").rglob("*-99999.parquet"))
    assert list((run.root / "quarantine").rglob("*-99999.parquet"))
    records = [json.loads(p.read_text()) for p in (run.root / "evals").glob("*.json")]
    refused = {e["eval_id"] for e in records if e.get("refused")}
    assert refused & {"val__cand_001__k2", "val__cand_002__k2"}
    assert not events(run.root, "accept")
