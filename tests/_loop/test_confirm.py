"""confirm: pooled higher-power numbers relabel a tentative best without moving it."""

import math
import statistics

import pytest
from fixtures.projects import make_candidate, make_project

from capevolve._loop.confirm import confirm
from capevolve._loop.decide import accept, gate_candidate
from capevolve._loop.evaluate import evaluate
from capevolve._loop.run import start_run
from capevolve._policy.confirm import confirm_numbers
from capevolve._store.evals import all_evals
from capevolve._store.rundir import RunDir
from capevolve.errors import GateError
from capevolve.kinds import Confidence


def test_confirm_pools_new_seeds_and_relabels_without_moving_the_best(tmp_path):
    project = make_project(tmp_path / "p", 40, trials=3, quality=0.4,
                           extra="gate: {policy: keep-best}\n")
    run = RunDir.open(start_run(project, tmp_path / "run")["run_dir"])
    cid = evaluate(run, make_candidate(tmp_path / "c", 0.45), "val")["candidate_id"]
    assert gate_candidate(run, cid)["tentative"]
    accept(run, cid)
    doc = confirm(run, cid, trials=6)
    assert run.best_id == cid == doc["best_id"] and doc["reference_id"] == "seed"
    assert doc["n_candidate"] == doc["n_best"] == 9 and doc["label_before"] == "within_noise"
    evals = {e.eval_id: e for e in all_evals(run)}
    old, new = (evals[i] for i in doc["evals"][cid])
    assert new.n_trials == 9
    expected = [old.run_means[str(k)] for k in range(3)] + [new.run_means[str(k)]
                                                            for k in range(3, 9)]
    assert doc["pooled_trial_means"][cid] == expected  # new seeds only from the fresh eval
    c, b = doc["pooled_trial_means"][cid], doc["pooled_trial_means"]["seed"]
    se = math.sqrt(statistics.variance(c) / 9 + statistics.variance(b) / 9)
    assert doc["delta"] == pytest.approx(statistics.fmean(c) - statistics.fmean(b))
    assert doc["se_diff"] == pytest.approx(se)
    assert doc["tentative"] == (doc["confidence"] != "significant")
    assert (run.root / "confirmations" / "1.json").is_file()


def test_confirm_refuses_a_best_with_nothing_to_confirm(tmp_path):
    project = make_project(tmp_path / "p", 20, trials=2)
    run = RunDir.open(start_run(project, tmp_path / "run")["run_dir"])
    with pytest.raises(GateError, match="no move to confirm"):
        confirm(run, "seed", trials=2)


def test_the_label_is_the_t_test_not_the_raw_band():
    """More trials shrink SE_diff, not the raw stdev: a real gain becomes significant while
    the raw band stays uncleared (and a zero-variance move is labelled by min_delta)."""
    noisy_best = [0.40, 0.50, 0.60] * 10
    noisy_cand = [0.45, 0.55, 0.65] * 10
    few = confirm_numbers(noisy_cand[:3], noisy_best[:3], 0.02)
    many = confirm_numbers(noisy_cand, noisy_best, 0.02)
    assert few.confidence == Confidence.WITHIN_NOISE
    assert many.confidence == Confidence.SIGNIFICANT and not many.raw_band_cleared
    flat = confirm_numbers([0.5, 0.5], [0.49, 0.49], 0.02)
    assert flat.se_diff == 0 and flat.t is None and flat.confidence == Confidence.NEGLIGIBLE
    step = confirm_numbers([0.6, 0.6], [0.5, 0.5], 0.02)
    assert step.confidence == Confidence.SIGNIFICANT and step.toward_goal
