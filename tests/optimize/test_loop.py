"""The loop accepts only through the full-val gate, screens on train, refuses protected
edits before any rollout, and never evaluates a proposal that changed nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixtures.loops import events, ledger, loop_run, raw_units, scripted_edits

import capevolve
from capevolve.errors import ConfigError


def _optimize(run, **kwargs):
    return capevolve.optimize_run(run.root, engine="local", **kwargs).to_dict()


@pytest.mark.slow
def test_hill_climb_accepts_only_through_the_full_val_gate(tmp_path):
    run = loop_run(tmp_path)
    edits = scripted_edits(tmp_path / "edits", [0.95, 0.2, 0.2, {"notes.md": "hi\n"}])
    result = _optimize(run, algorithm="hill-climb", proposer=f"scripted:{edits}")
    rows = result["iterations"]
    assert [r["outcome"] for r in rows] == ["accept", "screened_out", "no_change",
                                            "screened_out", "no_change"]
    assert "identical to cand_002" in rows[2]["reason"]
    assert result["stop_reason"].startswith("the proposer has nothing more")
    assert result["best_id"] == "cand_001"
    gates = {(g["candidate_id"], g["best_id"]): g for g in events(run.root, "gate")}
    for acc in events(run.root, "accept"):
        gate = gates[(acc["candidate_id"], acc["previous_best"])]
        assert gate["decision"] == "accept" and not gate["exploratory"]
    # the ledger is the record of the loop, and its gate numbers are the recorded gate's
    stored = ledger(run.root)
    assert [r["iteration"] for r in stored] == [1, 2, 3, 4, 5]
    first = gates[("cand_001", "seed")]
    assert stored[0]["gate"]["delta"] == first["delta"] and stored[0]["gate"]["se"] == first["se"]
    assert stored[0]["gate"]["threshold"] == pytest.approx(first["k_se"] * first["se"])
    # 6 val tasks x 2 trials, then the confirmation's 4 fresh trials on both sides (counted
    # from rows); the losing children are stopped at their first val trial
    assert stored[0]["metric_calls"] == 6 * 2 + 2 * 6 * 4
    # the no_change iterations paid for nothing
    assert {e for e, _, _ in raw_units(run.root)} == {
        "val__seed__k2", "val__cand_001__k2", "val__cand_002__k2", "val__cand_003__k2",
        "val__cand_001__k4__confirm_t2", "val__seed__k4__confirm_t2"}


@pytest.mark.slow
def test_pareto_screens_on_a_train_minibatch_and_a_killed_child_is_never_gated(tmp_path):
    run = loop_run(tmp_path)
    edits = scripted_edits(tmp_path / "edits", [0.05, 0.95])
    result = _optimize(run, algorithm="pareto", proposer=f"scripted:{edits}", minibatch=6)
    rows = result["iterations"]
    assert rows[0]["outcome"] == "screened_out" and rows[0]["screen"] == "killed"
    assert rows[1]["outcome"] == "accept" and rows[1]["screen"] == "pass"
    gated = {g["candidate_id"] for g in events(run.root, "gate")}
    assert "cand_001" not in gated and "cand_002" in gated
    # the screen is a subset evaluation of the iteration's minibatch (one trial), recorded
    stored = ledger(run.root)
    train = set(run.splits.train)
    for record in stored:
        assert len(record["minibatch"]) == 6 and set(record["minibatch"]) <= train
    assert stored[0]["minibatch"] != stored[1]["minibatch"]  # drawn per iteration
    units = raw_units(run.root)
    child = {(t, k) for e, t, k in units if e.startswith("train__cand_001__k1__screen_s")}
    assert child == {(t, 0) for t in stored[0]["minibatch"]}
    assert not [u for u in units if u[0] == "train__cand_001__k1"]  # never the full split
    assert "val__cand_001__k2" not in {e for e, _, _ in units}
    assert result["best_id"] == "cand_002"
    # the parent's numbers come from the same minibatch tasks (rows, not a guess)
    parent = {(t, k) for e, t, k in units if e.startswith("train__seed__k1__screen_s")}
    assert {t for t, _ in parent} >= set(stored[0]["minibatch"])


@pytest.mark.slow
def test_a_child_touching_a_protected_path_is_refused_before_any_rollout(tmp_path):
    run = loop_run(tmp_path)
    edits = scripted_edits(tmp_path / "edits", [{"splits.json": "{}", "quality.txt": "0.99"}])
    result = _optimize(run, algorithm="hill-climb", proposer=f"scripted:{edits}")
    row = result["iterations"][0]
    assert row["outcome"] == "refused" and "protected" in row["reason"]
    assert not [u for u in raw_units(run.root) if "cand_001" in u[0]]
    assert result["best_id"] == "seed"
    tamper = events(run.root, "tamper")
    assert tamper and tamper[0]["candidate_id"] == "cand_001"


@pytest.mark.slow
def test_the_parents_minibatch_numbers_reuse_its_full_train_rows(tmp_path):
    """A parent with a complete one-trial train evaluation (the diagnosis's) is compared
    on the minibatch from those rows: no screen evaluation of the parent is paid for; the
    child's screen evaluation is refused by the gate (informational only)."""
    from capevolve._loop import decide
    from capevolve.errors import GateError

    run = loop_run(tmp_path)
    capevolve.evaluate(run.root, "seed", "train", n_trials=1, engine="local")
    edits = scripted_edits(tmp_path / "edits", [0.05])
    result = _optimize(run, algorithm="pareto", proposer=f"scripted:{edits}", minibatch=4)
    assert result["iterations"][0]["outcome"] == "screened_out"
    evals = {e for e, _, _ in raw_units(run.root)}
    assert not [e for e in evals if e.startswith("train__seed__k1__screen")]
    screen = [e for e in evals if e.startswith("train__cand_001__k1__screen_s")]
    assert len(screen) == 1
    record = json.loads((run.root / "evals" / f"{screen[0]}.json").read_text())
    assert record["purpose"] == "screen" and record["task_subset"]["count"] == 4
    with pytest.raises(GateError):
        decide.gate_candidate(run, "cand_001")  # no full val evaluation: nothing to gate


def _script(tmp_path: Path, body: str) -> str:
    script = tmp_path / "propose.sh"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(0o755)
    return str(script)


@pytest.mark.slow
def test_a_failing_timed_out_or_idle_command_is_a_no_change_without_rollouts(tmp_path):
    run = loop_run(tmp_path)
    pidfile = tmp_path / "grandchild.pid"
    script = _script(tmp_path, f"""
case "$2" in
  1) echo "cannot do it" >&2; exit 3 ;;
  2) sleep 60 & echo $! > {pidfile}; wait ;;
  3) exit 0 ;;
  *) echo 0.9 > "$1/quality.txt"
     echo '{{"tokens": 1234, "cost_usd": 0.5}}' > "$CAPEVOLVE_SPEND_FILE" ;;
esac
""")
    result = _optimize(run, algorithm="hill-climb", iterations=4, timeout_s=2,
                       proposer=f"command:{script} {{workdir}} {{iteration}}")
    rows = result["iterations"]
    assert [r["outcome"] for r in rows[:3]] == ["no_change"] * 3
    assert "exited with status 3" in rows[0]["reason"]
    assert "timed out after 2 s" in rows[1]["reason"]
    assert "changed nothing" in rows[2]["reason"]
    stored = ledger(run.root)
    assert "cannot do it" in stored[0]["detail"]["stderr_tail"]
    assert stored[0]["detail"]["exit_status"] == 3
    pid = int(pidfile.read_text())
    assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text()
    assert rows[3]["outcome"] in {"accept", "reject", "indecisive"}
    assert stored[3]["spend"] == {"tokens": 1234, "cost_usd": 0.5,
                                  "wall_s": stored[3]["spend"]["wall_s"]}
    assert result["spend"]["optimizer"]["tokens"] == 1234
    assert result["spend"]["optimizer"]["cost_usd"] == 0.5
    by_role = capevolve.status(run.root).spent_by_role
    assert by_role["optimizer"].tokens == 1234 and by_role["optimizer"].cost_usd == 0.5
    assert by_role["runner"].tokens != 1234  # the runner's spend is kept apart
    # only the fourth child was ever snapshotted and evaluated
    assert run.candidate_ids() == ["cand_001", "seed"]


@pytest.mark.slow
def test_the_proposer_is_shown_train_context_and_never_a_test_id(tmp_path):
    run = loop_run(tmp_path)
    capture = tmp_path / "seen"
    script = _script(tmp_path, f'cp -r "$1/.." {capture}\n')
    _optimize(run, algorithm="hill-climb", iterations=1,
              proposer=f"command:{script} {{workdir}}")
    texts = "\n".join(p.read_text(errors="replace") for p in capture.rglob("*") if p.is_file())
    diagnosis = json.loads((capture / "context" / "diagnosis.json").read_text())
    assert diagnosis["split"] == "train" and diagnosis["tag"] == "seed"
    assert "INSTRUCTIONS.md" in {p.name for p in capture.iterdir()}
    for task_id in run.splits.test:
        assert task_id not in texts, task_id


@pytest.mark.slow
def test_rejected_approaches_are_shown_to_the_next_proposal(tmp_path):
    run = loop_run(tmp_path)
    seen = tmp_path / "instructions"
    seen.mkdir()
    script = _script(tmp_path, f'cp "$2" {seen}/$3.md; echo 0.1 > "$1/quality.txt"\n')
    _optimize(run, algorithm="hill-climb", iterations=2,
              proposer=f"command:{script} {{workdir}} {{instructions}} {{iteration}}")
    second = (seen / "2.md").read_text()
    assert "iteration 1 on seed: screened_out" in second and "first look" in second


@pytest.mark.slow
@pytest.mark.parametrize(("kwargs", "message"), [
    ({"algorithm": "simulated-annealing", "proposer": "scripted:x"}, "--algorithm"),
    ({"algorithm": "hill-climb", "proposer": "oracle:x"}, "unknown proposer kind"),
    ({"algorithm": "hill-climb", "proposer": "command:echo hi"}, "no {workdir}"),
    ({"algorithm": "hill-climb", "proposer": "command:x {workdir} {bogus}"}, "placeholder"),
    ({"algorithm": "hill-climb", "proposer": "scripted:/nonexistent"}, "no such directory"),
    ({"algorithm": "hill-climb", "proposer": "scripted:EDITS", "parallel": 0}, "--parallel"),
    ({"algorithm": "pareto", "proposer": "scripted:EDITS", "minibatch": 0}, "--minibatch"),
    ({"algorithm": "hill-climb", "proposer": "scripted:EDITS", "focus": "x"}, "--focus"),
    ({"resume": True}, "no optimize loop to resume"),
])
def test_bad_settings_are_refused_before_any_rollout(tmp_path, kwargs, message):
    run = loop_run(tmp_path)
    edits = scripted_edits(tmp_path / "edits", [0.9])
    kwargs = {k: v.replace("EDITS", str(edits)) if isinstance(v, str) else v
              for k, v in kwargs.items()}
    with pytest.raises(ConfigError, match=message.replace("{", r"\{").replace("}", r"\}")):
        _optimize(run, **kwargs)
    assert raw_units(run.root) == []
    assert not (run.root / "optimize").exists()


def test_a_stop_condition_that_parses_to_nothing_is_refused(tmp_path):
    run = loop_run(tmp_path, extra='stop_condition: "when it feels right"\n')
    edits = scripted_edits(tmp_path / "edits", [0.9])
    with pytest.raises(ConfigError, match="parses to nothing.*when it feels right"):
        _optimize(run, algorithm="hill-climb", proposer=f"scripted:{edits}")
    assert raw_units(run.root) == []


@pytest.mark.slow
def test_a_second_loop_needs_resume_and_resume_keeps_the_settings(tmp_path):
    run = loop_run(tmp_path)
    edits = scripted_edits(tmp_path / "edits", [0.2, 0.95])
    _optimize(run, algorithm="hill-climb", proposer=f"scripted:{edits}", iterations=1)
    with pytest.raises(ConfigError, match="pass --resume"):
        _optimize(run, algorithm="hill-climb", proposer=f"scripted:{edits}")
    with pytest.raises(ConfigError, match="differs from the loop's"):
        _optimize(run, algorithm="pareto", resume=True)
    result = _optimize(run, resume=True, iterations=2)
    assert [r["iteration"] for r in result["iterations"]] == [1, 2]
    assert result["iterations"][1]["outcome"] == "accept"


@pytest.mark.slow
def test_a_met_stop_condition_stops_finalizes_and_status_shows_the_parse(tmp_path):
    run = loop_run(tmp_path, extra='stop_condition: "val mean >= 0.8 or maybe later"\n')
    edits = scripted_edits(tmp_path / "edits", [0.99, 0.2, 0.3])
    result = _optimize(run, algorithm="hill-climb", proposer=f"scripted:{edits}",
                       finalize=True)
    assert len(result["iterations"]) == 1
    assert result["stop_reason"].startswith("stop condition met: val mean >= 0.8")
    final = json.loads((run.root / "final.json").read_text())
    assert result["final"]["best_id"] == final["best_id"] == "cand_001"
    assert result["final"]["delta"] == final["delta"]
    assert (run.root / "seal.json").is_file() and (run.root / "report.md").is_file()
    with pytest.raises(capevolve.RunDirError):  # the run is closed: no second loop on it
        _optimize(run, resume=True, iterations=3)
    status = capevolve.status(run.root).to_dict()
    assert status["stop"]["unparsed"] == ["maybe later"]
    assert status["optimize"]["iterations"] == 1
    assert status["optimize"]["stopped"] == result["stop_reason"]


@pytest.mark.slow
def test_parallel_children_are_proposed_concurrently_and_decided_in_order(tmp_path):
    run = loop_run(tmp_path, extra='stop_condition: "12 iterations"\n'
                   "gate: {first_look: false}\n")  # every child gated
    stamps = tmp_path / "stamps"
    stamps.mkdir()
    script = _script(tmp_path, f"""
python3 -c 'import time; print(time.time())' > {stamps}/$2.start
sleep 1.5
echo 0.$((2 + $2)) > "$1/quality.txt"
python3 -c 'import time; print(time.time())' > {stamps}/$2.end
""")
    result = _optimize(run, algorithm="hill-climb", iterations=3, parallel=3,
                       proposer=f"command:{script} {{workdir}} {{iteration}}")
    starts = [float((stamps / f"{i}.start").read_text()) for i in (1, 2, 3)]
    ends = [float((stamps / f"{i}.end").read_text()) for i in (1, 2, 3)]
    assert max(starts) < min(ends), "the three proposals did not overlap"
    rows = result["iterations"]
    assert [r["iteration"] for r in rows] == [1, 2, 3]
    assert [r["parent"] for r in rows] == ["seed"] * 3
    # rollouts paid per iteration: its child's val (6 tasks x 2 trials), and for the first
    # also the parent's one-trial train evaluation behind the diagnosis (12 train tasks)
    assert [r["metric_calls"] for r in rows] == [24, 12, 12]
    assert all(r["outcome"] in {"accept", "reject", "indecisive"} for r in rows)
    gates = {g["candidate_id"] for g in events(run.root, "gate")}
    assert gates == {"cand_001", "cand_002", "cand_003"}


@pytest.mark.slow
def test_a_plateau_is_reported_in_status_and_the_report_after_five_gated_misses(tmp_path):
    from capevolve.report.markdown import render

    run = loop_run(tmp_path, extra='stop_condition: "12 iterations"\n'
                   "gate: {first_look: false}\n")  # every child gated
    edits = scripted_edits(tmp_path / "edits", [0.2, 0.25, 0.3, 0.35, 0.15])
    result = _optimize(run, algorithm="hill-climb", proposer=f"scripted:{edits}",
                       iterations=4)
    assert result["plateau"] is None  # four gated misses are not yet a plateau
    result = _optimize(run, resume=True, iterations=5)
    assert [r["outcome"] for r in result["iterations"]] == ["reject"] * 5
    assert result["plateau"] and "last 5 gated" in result["plateau"]
    assert capevolve.status(run.root).optimize.plateau == result["plateau"]
    report = render(run)
    assert "## Optimization loop" in report and f"- plateau: {result['plateau']}" in report
    section = report.split("## Optimization loop")[1].split("## Gates")[0]
    assert section.count("| reject |") == 5


def test_clusters_whose_fix_was_tried_and_rejected_are_marked_for_the_proposer():
    from types import SimpleNamespace

    from capevolve.optimize.context import mark_tried
    from capevolve.records._optimize import IterationRecord

    def rec(i, parent, focus, outcome):
        return IterationRecord(iteration=i, algorithm="hill-climb", proposer="p",
                               parent_id=parent, focus=focus, outcome=outcome,
                               started_at="t", finished_at="t")

    session = SimpleNamespace(ledger=[rec(1, "seed", "confirm", "reject"),
                                      rec(2, "seed", "refund", "accept"),
                                      rec(3, "cand_002", "confirm", "reject"),
                                      rec(4, "seed", "confirm", "screened_out")])
    diagnosis = {"clusters": [{"signature": "confirm"}, {"signature": "refund"},
                              {"signature": "greet"}]}
    marked = mark_tried(diagnosis, session, "seed")["clusters"]
    assert marked[0]["tried_and_rejected"] == [1, 4]
    assert "tried_and_rejected" not in marked[1] and "tried_and_rejected" not in marked[2]
    assert "tried_and_rejected" not in diagnosis["clusters"][0]  # the input is not modified


@pytest.mark.slow
def test_a_proposer_writing_into_the_run_dir_is_discarded_and_the_files_restored(tmp_path):
    run = loop_run(tmp_path)
    script = _script(tmp_path, f"""
echo 0.99 > "$1/quality.txt"
case "$2" in
  1) echo '{{"kind": "accept", "candidate_id": "cand_009"}}' >> {run.root}/events.jsonl ;;
  2) echo '{{"iteration": 2, "outcome": "accept"}}' >> {run.root}/optimize/ledger.jsonl
     mkdir -p {run.root}/rollouts/split=val/candidate=cand_001
     echo junk > {run.root}/rollouts/split=val/candidate=cand_001/planted.parquet ;;
  3) echo "# edited" >> {tmp_path}/proj/adapter.py ;;
esac
""")
    events_before = (run.root / "events.jsonl").read_bytes()
    result = _optimize(run, algorithm="hill-climb", iterations=5,
                       proposer=f"command:{script} {{workdir}} {{iteration}}")
    rows = result["iterations"]
    assert [r["outcome"] for r in rows] == ["no_change", "no_change", "no_change"]
    assert "events.jsonl was changed by a proposer (restored)" in rows[0]["reason"]
    assert "ledger.jsonl was changed by a proposer (restored)" in rows[1]["reason"]
    assert "changed the project's frozen files" in rows[2]["reason"]
    assert result["stop_reason"] == rows[2]["reason"].removeprefix("refused: ")
    assert (run.root / "events.jsonl").read_bytes().startswith(events_before)
    assert not events(run.root, "accept") and run.candidate_ids() == ["seed"]
    assert not (run.root / "rollouts" / "split=val" / "candidate=cand_001"
                / "planted.parquet").exists()
    assert [r["iteration"] for r in ledger(run.root)] == [1, 2, 3]


@pytest.mark.slow
def test_a_loop_that_kept_the_seed_leaves_test_unscored_and_the_run_open(tmp_path):
    """optimize --finalize with no accept: no seal, no test row, not_finalized says why; the
    run stays open (a later loop may go on)."""
    run = loop_run(tmp_path)
    edits = scripted_edits(tmp_path / "edits", [0.2])
    result = _optimize(run, algorithm="hill-climb", proposer=f"scripted:{edits}",
                       finalize=True)
    assert result["best_id"] == "seed" and result["final"] is None
    assert "the best is the seed" in result["not_finalized"]
    assert not (run.root / "seal.json").exists() and not (run.root / "final.json").exists()
    assert not [u for u in raw_units(run.root) if u[0].startswith("test__")]
    assert not run.finalized()
