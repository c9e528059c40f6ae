"""History: clusters whose fix was tried and rejected are marked and ranked last;
ranking keeps a small structural cluster afloat."""

from __future__ import annotations

from diagnose.diag_support import READ_CALLS, build, make_run, trial, write_rows

from capevolve._loop.decide import reject
from capevolve.diagnose import DiagnoseOptions, diagnose
from capevolve.diagnose.history import TriedFix, reject_events, targeted_cluster
from capevolve.diagnose.rank import STRUCTURAL_WEIGHT
from capevolve.kinds import Decision, EventKind

REFUND = "the refund amount was never told"
SEAT = "the seat upgrade was skipped"


def _rows(run) -> list[dict]:
    ids = run.splits.val
    rows = [{"task_id": t, "reward": 0.0, "feedback": REFUND} for t in ids[:3]]
    rows += [{"task_id": t, "reward": 0.0, "feedback": SEAT} for t in ids[3:5]]
    return rows + [{"task_id": ids[5], "reward": 1.0, "feedback": "fine"}]


def _reject(run, tmp_path, name: str, note: str | None) -> str:
    src = tmp_path / name
    src.mkdir()
    (src / "prompt.md").write_text(f"edit {name}")
    cid = run.snapshot(f"cand_{name}", src).id
    # reject takes only a gated candidate; these tests are about the history it leaves
    run.record(EventKind.GATE, candidate_id=cid, best_id=run.best_id,
               decision=Decision.INDECISIVE, reasons=["not measured here"])
    reject(run, cid, note=note)
    return cid


def test_a_rejected_iterations_cluster_is_marked_tried_and_ranked_last(tmp_path):
    """reject --note 'cluster: <signature>; ...' marks that cluster 'tried and rejected in
    iteration N' (N = its decision's ordinal) and moves it after the untried ones."""
    run = make_run(tmp_path)
    write_rows(run, _rows(run))
    first = diagnose(run, DiagnoseOptions("val", "seed"))
    top = first["clusters"][0]
    assert top["history"] is None and top["tasks"] == sorted(run.splits.val[:3])
    _reject(run, tmp_path, "a", "no effect")  # iteration 1: names no cluster
    cid = _reject(run, tmp_path, "b", f"cluster: {top['signature']}; amounts rule as MUST")
    again = diagnose(run, DiagnoseOptions("val", "seed"))
    marked = next(c for c in again["clusters"] if c["signature"] == top["signature"])
    assert marked["history"] == "tried and rejected in iteration 2"
    assert marked["tried"][0]["candidate_id"] == cid and marked["rank"] == 2
    assert again["clusters"][0]["history"] is None
    assert again["clusters"][-1] is marked
    assert [f["iteration"] for f in again["history"]["tried"]] == [1, 2]


def test_targeted_cluster_reads_the_field_then_the_note():
    class Event:
        def __init__(self, note=None, cluster=None):
            self.note, self.cluster = note, cluster

    assert targeted_cluster(Event(cluster="write made first")) == "write made first"
    assert targeted_cluster(Event(note='tried it. Cluster= "told amount customer"')) == \
        "told amount customer"
    assert targeted_cluster(Event(note="made it shorter")) is None
    assert targeted_cluster(Event()) is None


def test_reject_events_number_iterations_by_decision(tmp_path):
    run = make_run(tmp_path)
    _reject(run, tmp_path, "a", "cluster: x")
    _reject(run, tmp_path, "b", None)
    fixes = reject_events(run)
    assert [(f.iteration, f.cluster) for f in fixes] == [(1, "x"), (2, None)]


def test_a_rephrased_target_still_matches_by_key_overlap():
    """'refund amount told' targets the cluster signed 'refund amount' (same key rule)."""
    result = build([trial("t1", 0.0, REFUND), trial("t2", 0.0, REFUND)],
                   history=[TriedFix(3, "c", "seed", "Refund amount told", None, "events")])
    assert result["clusters"][0]["history"] == "tried and rejected in iteration 3"


def test_a_small_structural_cluster_outranks_a_larger_cosmetic_one():
    """Two narrated stalls (lost 2.0) rank above a cosmetic cluster losing 4.0: priority is
    score_lost x STRUCTURAL_WEIGHT for narrated_without_action."""
    claim = "Your order has been cancelled."
    trials = [trial(f"n{i}", 0.0, "order still open", output=claim, tool_calls=READ_CALLS)
              for i in range(2)]
    trials += [trial(f"c{i}", 0.0, "greeting lacked the customer's name") for i in range(4)]
    result = build(trials)
    assert [c["signature"] for c in result["clusters"]][0] == "narrated_without_action"
    top = result["clusters"][0]
    assert top["priority"] == 2.0 * STRUCTURAL_WEIGHT and top["rank"] == 1
    assert result["clusters"][1]["score_lost"] == 4.0 and result["clusters"][1]["rank"] == 2


def test_a_capability_gap_tag_lifts_a_cluster_on_re_diagnosis():
    """A judgement CAPABILITY-GAP carried from the earlier file makes a cluster structural."""
    trials = [trial(f"s{i}", 0.0, "stalled after saying it would book the hotel")
              for i in range(2)]
    trials += [trial(f"c{i}", 0.0, "greeting lacked the customer's name") for i in range(4)]
    first = build(trials)
    small = next(c for c in first["clusters"] if len(c["tasks"]) == 2)
    assert small["rank"] == 2
    previous = {"clusters": [{**small, "tag": "CAPABILITY-GAP"}]}
    again = build(trials, previous=previous)
    assert again["clusters"][0]["signature"] == small["signature"]
    assert again["clusters"][0]["tag"] == "CAPABILITY-GAP"


def test_a_target_naming_no_cluster_marks_nothing_and_sources_can_be_added(tmp_path,
                                                                           monkeypatch):
    """A reject naming an unknown cluster marks none; a second source (an optimizer's
    ledger) is one more function in SOURCES, merged by iteration."""
    from capevolve.diagnose import history

    run = make_run(tmp_path)
    write_rows(run, _rows(run))
    _reject(run, tmp_path, "a", "cluster: zebra crossing lights")
    result = diagnose(run, DiagnoseOptions("val", "seed"))
    assert all(c["history"] is None for c in result["clusters"])
    ledger = [TriedFix(7, "cand_l", "seed", SEAT, "from the ledger", "ledger")]
    monkeypatch.setattr(history, "SOURCES", (*history.SOURCES, lambda _run: ledger))
    assert [f.source for f in history.tried_fixes(run)] == ["events", "ledger"]
    again = diagnose(run, DiagnoseOptions("val", "seed"))
    seat = next(c for c in again["clusters"] if "seat" in c["signature"])
    assert seat["history"] == "tried and rejected in iteration 7"


def test_the_optimize_ledger_marks_its_rejected_focus_cluster(tmp_path):
    """A rejected optimize iteration whose proposal targeted a cluster marks that cluster,
    numbered by the loop's iteration, in place of its reject event that names none."""
    from capevolve._store.iterations import LoopFiles
    from capevolve.diagnose import history
    from capevolve.records._optimize import IterationRecord, Outcome

    run = make_run(tmp_path)
    write_rows(run, _rows(run))
    cid = _reject(run, tmp_path, "loop", None)  # the loop's reject event: no cluster named
    stamp = "2026-12-01T00:00:00+00:00"
    LoopFiles(run.root).append(IterationRecord(
        iteration=1, algorithm="hill-climb", proposer="scripted", parent_id="seed",
        child_id=cid, focus=SEAT, outcome=Outcome.REJECT, reasons=("delta within noise",),
        started_at=stamp, finished_at=stamp))
    fixes = history.tried_fixes(run)
    assert [(f.source, f.iteration, f.cluster) for f in fixes] == [("optimize", 1, SEAT)]
    result = diagnose(run, DiagnoseOptions("val", "seed"))
    seat = next(c for c in result["clusters"] if "seat" in c["signature"])
    refund = next(c for c in result["clusters"] if "refund" in c["signature"])
    assert seat["history"] == "tried and rejected in iteration 1"
    assert refund["history"] is None
