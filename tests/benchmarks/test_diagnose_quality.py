"""The diagnose-quality benchmark: its scoring (ARI, alignment) and its targets."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

PERF = Path(__file__).resolve().parents[2] / "benchmarks" / "perf"
sys.path.insert(0, str(PERF))

from diagnose_quality import (  # noqa: E402
    UNMATCHED,
    Item,
    adjusted_rand_index,
    label_items,
    per_cause,
    score,
)


def test_ari_is_one_for_the_same_partition_and_drops_for_a_merge():
    truth = ["a", "a", "b", "b", "c", "c"]
    assert adjusted_rand_index(truth, ["x", "x", "y", "y", "z", "z"]) == 1.0
    merged = adjusted_rand_index(truth, ["x", "x", "x", "x", "z", "z"])
    split = adjusted_rand_index(truth, ["x", "w", "y", "v", "z", "u"])
    assert merged < 0.7 and split < 0.7


def test_items_are_matched_to_units_by_text_and_unmatched_counts_against():
    diagnosis = {"reflective_dataset": [{"task_id": "t", "trial": 0, "causes": [
        {"part": "messages", "text": "The amount was never told.", "cluster": "amount"}]}],
        "failing_total": 1, "clusters": [{}], "sanity": []}
    items = [Item("t", 0, "messages", "the amount  was never told.", "report"),
             Item("t", 0, "database", "the refund went elsewhere.", "payment")]
    assert label_items(diagnosis, items) == ["amount", UNMATCHED]
    assert per_cause(["r", "r"], [UNMATCHED, UNMATCHED])["r"]["purity"] == 0.0
    assert score(diagnosis, items)["unmatched"] == 1


@pytest.mark.slow
def test_airline_benchmark_meets_the_ari_target(tmp_path):
    """The differently worded benchmark: diagnose's clusters match its causes (ARI >= 0.7)."""
    import bench_diagnose_quality as bench

    figures = bench.bench_airline(tmp_path)["airline/val"]
    assert figures["ari"] >= bench.TARGET_ARI and figures["unmatched"] == 0
    assert figures["per_cause"]["narrated_rebook"]["cluster"] == "narrated_without_action"
    # no rollout of the benchmark records a tool that escalates or transfers, so the
    # escalation claimed over a note is no missing action a tool could have made
    assert figures["per_cause"]["claimed_escalation"]["cluster"] != \
        "claimed_without_matching_action"


@pytest.mark.slow
def test_retail_seed_meets_the_ari_target(tmp_path):
    """On the retail seed the clusters match the injected causes (ARI >= 0.7 on val)."""
    import bench_diagnose_quality as bench

    figures = bench.bench_retail(tmp_path)
    assert figures["retail/val"]["ari"] >= bench.TARGET_ARI
    assert figures["retail/val"]["per_cause"]["act"]["recall"] >= 0.9


def _figures(ari: float, held_out: bool = False, designed_on: bool = False) -> dict:
    figures = {"items": 10, "failing_trials": 8, "rules": 3, "clusters": 4, "unmatched": 0,
               "ari": ari, "per_cause": {}, "sanity": [], "first_words_ari": 0.1}
    return {**figures, "held_out": True, "designed_on": designed_on} if held_out else figures


@pytest.mark.parametrize(("airline", "held_out", "status"),
                         [(0.8, 0.2, 0), (0.6, 0.9, 1), (0.8, 0.9, 0)])
def test_held_out_rows_report_but_never_decide_the_exit_status(monkeypatch, capsys,
                                                               airline, held_out, status):
    """A held-out row has no target (met null) whatever its ARI; the benchmarks the rules
    were built on decide the exit status."""
    import bench_diagnose_quality as bench
    from bench_row import parse_line

    monkeypatch.setattr(bench, "bench_retail", lambda root: {})
    monkeypatch.setattr(bench, "bench_airline", lambda root: {"airline/val": _figures(airline)})
    monkeypatch.setattr(bench, "bench_heldout",
                        lambda root: {"refund_desk/val": _figures(held_out, True, True),
                                      "hotel_desk/val": _figures(held_out, True)})
    monkeypatch.setattr(sys, "argv", ["bench_diagnose_quality.py"])
    assert bench.main() == status
    rows = [parse_line("q", line) for line in capsys.readouterr().out.splitlines()]
    rows = {r.figure: r for r in rows if r is not None}
    held = rows["diagnose clusters vs true causes, ARI, refund_desk/val (held out)"]
    assert (held.target, held.met, held.error) == ("", None, None)
    assert held.note.endswith("; rules designed on it")  # the row says what it measures
    fresh = rows["diagnose clusters vs true causes, ARI, hotel_desk/val (held out)"]
    assert fresh.note.endswith("; no rule designed on it") and fresh.met is None
    assert rows["diagnose clusters vs true causes, ARI, airline/val"].met is (airline >= 0.7)
