"""The grain checks: too coarse (one cluster over most failures with different sites or
parts), too fine; an artificially merged cluster is caught."""

from __future__ import annotations

from collections import Counter

from diagnose.diag_support import build, trial

from capevolve.diagnose.sanity import incoherent, sanity_checks


def _two_cause_diagnosis() -> dict:
    trials = [trial(f"a{i}", 0.0, "database: the refund went to `gift_card` not the card",
                    score_parts={"db": 0.0, "messages": 1.0}) for i in range(4)]
    trials += [trial(f"b{i}", 0.5, "messages: the write to `cancel_order` was never confirmed",
                     score_parts={"db": 1.0, "messages": 0.0}) for i in range(4)]
    trials += [trial("c0", 0.0, "database: the address update to `modify_address` was lost",
                     score_parts={"db": 0.0, "messages": 1.0})]
    return build(trials)


def _merged(records: list[dict]) -> dict:
    """Two cluster records fused into one, as a too-coarse key would produce."""
    a, b = records
    return {"signature": "merged", "tasks": sorted(a["tasks"] + b["tasks"]),
            "size": a["size"] + b["size"], "score_lost": a["score_lost"] + b["score_lost"],
            "parts": dict(Counter(a["parts"]) + Counter(b["parts"])),
            "sites": dict(Counter(a["sites"]) + Counter(b["sites"])), "structural": False}


def test_a_usable_clustering_raises_no_warning():
    result = _two_cause_diagnosis()
    assert len(result["clusters"]) == 3 and result["sanity"] == []


def test_an_artificially_merged_cluster_is_reported_too_coarse():
    """Merging the two big clusters (different parts, different sites) is caught."""
    result = _two_cause_diagnosis()
    big = [c for c in result["clusters"] if c["size"] == 4]
    merged = _merged(big)
    rest = [c for c in result["clusters"] if c["size"] != 4]
    warnings = sanity_checks([merged, *rest], result["failing_total"], result["failing_tasks"])
    assert any(w.startswith("too coarse: cluster 'merged' holds 8 of 9") for w in warnings)
    assert "different feedback parts" in incoherent(merged)


def test_a_merged_cluster_of_one_part_is_caught_by_its_sites():
    """Same part, different failure sites (tools / fields named) is also incoherent."""
    record = {"signature": "x", "tasks": ["a", "b", "c", "d"], "size": 6, "structural": False,
              "parts": {"database": 6}, "sites": {"gift_card": 3, "modify_address": 3}}
    other = {"signature": "y", "tasks": ["e"], "size": 1, "structural": False,
             "parts": {}, "sites": {}}
    warnings = sanity_checks([record, other], 7, 5)
    assert any("different failure sites" in w for w in warnings)


def test_one_big_coherent_cluster_is_not_too_coarse():
    """Most failures in one cluster whose units share part and site: no warning."""
    record = {"signature": "x", "tasks": ["a", "b", "c", "d"], "size": 6, "structural": False,
              "parts": {"messages": 6}, "sites": {"cancel_order": 6}}
    other = {"signature": "y", "tasks": ["e"], "size": 1, "structural": False,
             "parts": {"messages": 1}, "sites": {}}
    assert sanity_checks([record, other], 7, 5) == []


def test_the_retail_shape_that_was_too_coarse_is_now_split():
    """'database: X\nmessages: Y' on every failure: parts never fuse, and a part that
    scored full marks adds no cause."""
    pre = "[retail scorer] reward 1 = the database end state matches the reference."
    fb = [(f"{pre}\ndatabase: narrated without action: no write tool was called.\n"
           "messages: the refunded amount was never told to the customer.", 0.0, 0.0),
          (f"{pre}\ndatabase: the end state matches the reference.\n"
           "messages: the write (cancel_order) was made without asking to confirm.", 1.0, 0.0),
          (f"{pre}\ndatabase: cancel_order changed the database, but it must stay unchanged.\n"
           "messages: every fact was told.", 0.0, 1.0)]
    result = build([trial(f"t{i}{n}", (db + msg) / 2, f, n=n,
                          score_parts={"db": db, "messages": msg})
                    for i, (f, db, msg) in enumerate(fb) for n in range(3)])
    assert all(len(c["parts"]) == 1 for c in result["clusters"])
    assert len(result["clusters"]) == 4 and max(c["size"] for c in result["clusters"]) == 3
    assert not any("reference" in c["text"] or "every fact" in c["text"]
                   for e in result["reflective_dataset"] for c in e["causes"])
