"""finalize states a verdict on the val gain, says "not measured" for an incomplete test
evaluation, uses the CR1 clustered SE when tasks carry a cluster key, and
records every finalize in the project so a reused test split is visible."""

from __future__ import annotations

import json
import math

import pytest
from fixtures.projects import make_candidate, make_project

from capevolve._loop.decide import accept, gate_candidate
from capevolve._loop.evaluate import evaluate
from capevolve._loop.finalize import finalize
from capevolve._loop.run import SEED_ID, create_run
from capevolve._store import jsonfiles, ledger
from capevolve._store.evals_means import task_means_of
from capevolve.kinds import TestVerdict
from capevolve.report.markdown import render
from capevolve.stats import t_quantile

VAL = [f"v{i}" for i in range(10)]
TEST = [f"x{i}" for i in range(10)]


def _project(root, test_meta=None, val_meta=None, quality=0.3):
    """Val and test split fixed by an ids file; per-task metadata for the flex adapter."""
    tasks = [{"id": t, **(val_meta or {}).get(t, {})} for t in VAL]
    tasks += [{"id": t, **(test_meta or {}).get(t, {})} for t in TEST]
    project = make_project(root, tasks, trials=2, quality=quality,
                           splits="{ids_file: ids.json}")
    (project / "ids.json").write_text(json.dumps({"train": [], "val": VAL, "test": TEST}))
    return project


def _with_best(project, run_dir, cand_dir, test_quality: float | None):
    """A run whose best is a candidate of quality 0.95 on val (and ``test_quality`` on
    each test task when given), accepted through the gate."""
    run = create_run(project, run_dir)
    evaluate(run, SEED_ID, "val")
    overrides = {t: test_quality for t in TEST} if test_quality is not None else None
    cid = evaluate(run, make_candidate(cand_dir, 0.95, overrides), "val")["candidate_id"]
    assert gate_candidate(run, cid)["decision"] == "accept"
    accept(run, cid)
    return run


@pytest.mark.slow
def test_a_real_gain_is_confirmed(tmp_path):
    """Best 0.95 vs seed 0.3 everywhere: confirmed, with a delta whose CI lies above 0."""
    run = _with_best(_project(tmp_path / "p"), tmp_path / "run", tmp_path / "c", None)
    final = finalize(run, spend_test_ids=True)
    assert final["verdict"] == TestVerdict.CONFIRMED
    assert final["ci95"][0] > 0 and final["delta"] > 0 and final["missing"] == []
    assert final["val_delta"] > 0 and "confirmed" in final["verdict_text"]
    assert jsonfiles.read(run.layout.final) == final


@pytest.mark.slow
def test_a_gain_that_reverses_on_test_is_contradicted(tmp_path):
    """A candidate that is great on val and useless on test: contradicted, CI below 0."""
    run = _with_best(_project(tmp_path / "p", quality=0.6), tmp_path / "run",
                     tmp_path / "c", 0.0)
    final = finalize(run, spend_test_ids=True)
    assert final["verdict"] == TestVerdict.CONTRADICTED, final
    assert final["ci95"][1] < 0


@pytest.mark.slow
def test_a_gain_that_vanishes_on_test_is_not_confirmed(tmp_path):
    """Same quality as the seed on test (identical rewards): delta 0, not confirmed."""
    run = _with_best(_project(tmp_path / "p"), tmp_path / "run", tmp_path / "c", 0.3)
    final = finalize(run, spend_test_ids=True)
    assert final["verdict"] == TestVerdict.NOT_CONFIRMED
    assert final["delta"] == pytest.approx(0.0, abs=1e-12)


def test_the_seed_as_best_has_no_edit_to_confirm(tmp_path):
    """No accept: the verdict is no_edit."""
    run = create_run(_project(tmp_path / "p"), tmp_path / "run")
    final = finalize(run, spend_test_ids=True)
    assert final["verdict"] == TestVerdict.NO_EDIT and final["best_id"] == SEED_ID


@pytest.mark.slow
def test_incomplete_test_evaluation_is_not_measured_and_names_what_is_missing(tmp_path):
    """Two test tasks error on every trial: no delta, no CI, and missing names them."""
    broken = {"x3": {"mode": "error"}, "x7": {"mode": "raise"}}
    run = _with_best(_project(tmp_path / "p", test_meta=broken), tmp_path / "run",
                     tmp_path / "c", None)
    final = finalize(run, spend_test_ids=True)
    assert final["verdict"] == TestVerdict.NOT_MEASURED
    for key in ("delta", "se", "t", "p_value", "ci95", "df"):
        assert final[key] is None, key
    text = " ".join(final["missing"])
    assert "x3" in text and "x7" in text
    assert final["test"]["eval_id"] in text and final["test_baseline"]["eval_id"] in text
    assert "not measured" in final["verdict_text"]
    report = render(run)
    assert "not measured" in report and "x3" in report
    assert "95% CI [" not in report.split("## Held-out test")[1].split("## ")[0]


@pytest.mark.slow
def test_clustered_tasks_use_the_cr1_se_with_g_minus_1_df(tmp_path):
    """Test tasks in 4 clusters: final.json's SE is CR1 of the paired differences, df G-1."""
    clusters = {t: {"cluster": f"g{i % 4}"} for i, t in enumerate(TEST)}
    run = _with_best(_project(tmp_path / "p", test_meta=clusters), tmp_path / "run",
                     tmp_path / "c", None)
    final = finalize(run, spend_test_ids=True)
    best, base = (task_means_of(run, jsonfiles.read(run.layout.eval_json(final[k]["eval_id"])))
                  for k in ("test", "test_baseline"))
    diffs = {t: best[t] - base[t] for t in TEST}
    n, groups = len(diffs), 4
    mean = sum(diffs.values()) / n
    meat = sum(sum(diffs[t] - mean for t in TEST if clusters[t]["cluster"] == f"g{g}") ** 2
               for g in range(groups))
    cr1 = math.sqrt(groups / (groups - 1) * meat / n ** 2)
    plain = math.sqrt(sum((d - mean) ** 2 for d in diffs.values()) / (n - 1) / n)
    assert abs(cr1 - plain) > 1e-6  # the clustering matters here
    assert final["se"] == pytest.approx(cr1, abs=1e-12)
    assert final["df"] == groups - 1 and final["n_clusters"] == groups
    half = t_quantile(0.975, groups - 1) * cr1
    assert final["ci95"] == pytest.approx([mean - half, mean + half], abs=1e-12)


# -- the project's finalize ledger ------------------------------------------------------------

@pytest.mark.slow
def test_a_run_dir_recreated_under_the_same_name_still_counts_as_a_reuse(tmp_path):
    """`rm -rf demo-run` and a new run in the same place is another run: its finalize
    counts the earlier one, although both share the run id and the directory."""
    import shutil

    project = _project(tmp_path / "p")
    counts = []
    for _ in range(3):
        shutil.rmtree(tmp_path / "demo-run", ignore_errors=True)
        run = create_run(project, tmp_path / "demo-run")
        counts.append(finalize(run, spend_test_ids=True)["test_reuse"]["earlier_finalizes"])
    assert counts == [0, 1, 2]
    assert len(ledger.read(project).entries) == 3


@pytest.mark.slow
def test_a_later_run_on_the_same_test_ids_says_the_test_was_reused(tmp_path):
    """Three runs of one project finalize: the first is fresh, the others count 1 and 2
    earlier finalizes, in final.json and in the report."""
    project = _project(tmp_path / "p")
    finals = []
    for i in range(3):
        run = create_run(project, tmp_path / f"run{i}")
        finals.append((run, finalize(run, spend_test_ids=True)))
    reuse = [f["test_reuse"] for _, f in finals]
    assert [r["earlier_finalizes"] for r in reuse] == [0, 1, 2]
    assert reuse[2]["earlier_runs"] == ["run0", "run1"]
    assert reuse[1]["message"] == "test reused: 1 earlier finalizes on these ids"
    assert "test reused: 2 earlier finalizes on these ids" in render(finals[2][0])
    assert "test fresh" in render(finals[0][0])
    entries = ledger.read(project).entries
    assert [e.run_id for e in entries] == ["run0", "run1", "run2"]
    assert {e.test_ids_sha256 for e in entries} == {finals[0][1]["test_ids_sha256"]}
    assert entries[0].test_ids == sorted(TEST)


def test_the_ledger_entry_is_written_before_any_test_rollout(tmp_path, monkeypatch):
    """A finalize that dies while scoring test has already recorded itself."""
    from capevolve._loop import finalize as module

    project = _project(tmp_path / "p")
    run = create_run(project, tmp_path / "run")

    def crash(*args, **kwargs):
        assert len(ledger.read(project).entries) == 1
        raise KeyboardInterrupt

    monkeypatch.setattr(module, "evaluate", crash)
    with pytest.raises(KeyboardInterrupt):
        finalize(run, spend_test_ids=True)
    assert [e.run_id for e in ledger.read(project).entries] == ["run"]


def test_a_hand_edited_ledger_line_is_counted_not_hidden(tmp_path):
    """Garbage and a wrong-version line in the ledger: finalize still works and says so."""
    project = _project(tmp_path / "p")
    path = ledger.ledger_path(project)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('not json\n{"format_version": 99, "run_id": "x"}\n')
    final = finalize(create_run(project, tmp_path / "run"), spend_test_ids=True)
    assert final["test_reuse"]["earlier_finalizes"] == 0
    assert "2 ledger lines unreadable" in final["test_reuse"]["message"]


@pytest.mark.slow
def test_two_runs_finalizing_at_once_count_each_other(tmp_path):
    """Two runs of one project finalize in two processes at once: the ledger has both, and
    exactly one of them reports the other as an earlier finalize."""
    import subprocess
    import sys
    from pathlib import Path

    from fixtures.projects import clean_env

    project = _project(tmp_path / "p")
    runs = [create_run(project, tmp_path / f"run{i}") for i in range(2)]
    exe = Path(sys.executable).with_name("capevolve")
    procs = [subprocess.Popen([str(exe), "finalize", "--run-dir", str(r.root), "--engine",
                               "local", "--spend-test-ids", "--json"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=clean_env())
             for r in runs]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    counts = sorted(json.loads(out)["test_reuse"]["earlier_finalizes"] for out, _ in outs)
    assert counts == [0, 1]
    assert sorted(e.run_id for e in ledger.read(project).entries) == ["run0", "run1"]


@pytest.mark.slow
def test_a_finalize_that_fails_before_any_test_row_can_be_retried_in_process(tmp_path):
    """A finalize refused by a held run lock releases the seal: once the lock is free, the
    same process finalizes (the dead seal is set aside, the test split scored once)."""
    import subprocess
    import sys
    import textwrap

    from fixtures.projects import clean_env

    from capevolve.errors import RunDirError

    run = create_run(_project(tmp_path / "p"), tmp_path / "run")
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent("""
        import sys
        from capevolve._store.rundir import RunDir
        with RunDir.open(sys.argv[1]).locked():
            print("held", flush=True)
            sys.stdin.read()
    """), str(run.root)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        env=clean_env())
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(RunDirError, match="locked"):
            finalize(run, spend_test_ids=True)
    finally:
        holder.communicate("")
    final = finalize(run, spend_test_ids=True)
    assert final["verdict"] == TestVerdict.NO_EDIT
    assert len(list(run.root.glob("seal.aborted-*.json"))) == 1
