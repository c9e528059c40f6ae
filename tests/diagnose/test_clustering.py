"""Root-cause clustering: keys, preamble stripping, the shared-token rule, order, sanity."""

from __future__ import annotations

from diagnose.diag_support import build, cluster_of, signatures, trial

from capevolve.diagnose.cluster import group_root_cause
from capevolve.diagnose.signature import root_cause_keys, stem


def _keys(*feedbacks: str):
    return root_cause_keys(list(feedbacks), [frozenset()] * len(feedbacks))


def test_three_phrasings_of_one_cause_form_one_cluster():
    """'did not confirm the change' / 'omitted required confirmation step' / 'missing
    confirmation before the write' land in one cluster."""
    result = build([trial("t1", 0.0, "did not confirm the change"),
                    trial("t2", 0.0, "omitted required confirmation step"),
                    trial("t3", 0.0, "missing confirmation before the write")])
    assert len(result["clusters"]) == 1
    assert result["clusters"][0]["tasks"] == ["t1", "t2", "t3"]
    assert "confirm" in result["clusters"][0]["signature"]


def test_three_causes_behind_a_shared_preamble_form_three_clusters():
    """A scorer preamble shared by every feedback is stripped, leaving three causes."""
    pre = "Policy evaluation failed for this conversation: "
    result = build([trial("t1", 0.0, pre + "did not confirm the change"),
                    trial("t2", 0.0, pre + "refund amount above the allowed limit"),
                    trial("t3", 0.0, pre + "booked a cabin class the user never asked for")])
    assert len(result["clusters"]) == 3
    assert len({cluster_of(result, t) for t in ("t1", "t2", "t3")}) == 3
    assert not any("policy" in s for s in signatures(result))


def test_same_cause_with_different_numbers_and_literals_is_one_cluster():
    """Numbers, quoted literals and codes do not split one cause."""
    result = build([
        trial("t1", 0.0, 'expected total 42.50 but got 40.00 for order "ORD-123"'),
        trial("t2", 0.0, "expected total 17 but got 12 for order 'XK-99'"),
        trial("t3", 0.0, "expected total $3,100 but got 3000 for order `A7Z2`")])
    assert len(result["clusters"]) == 1 and result["clusters"][0]["size"] == 3


def test_a_shared_run_that_is_a_whole_feedback_is_no_preamble():
    """'wrong refund amount' is one failure's whole feedback: a cause, so nothing is stripped."""
    keys = _keys("wrong refund amount", "wrong refund amount for the premium member")
    assert keys[0].tokens == {"refund", "amount"}
    assert keys[1].tokens == {"refund", "amount", "premium", "member"}


def test_a_preamble_most_failures_share_is_stripped_even_if_one_lacks_it():
    """One failure without the scorer's preamble no longer turns stripping off."""
    pre = "Grading failed because the expected outcome was not met: "
    feedbacks = [pre + "did not confirm the change", pre + "refund amount above the limit",
                 pre + "booked a cabin class never asked for", pre + "seat upgrade skipped",
                 pre + "baggage allowance ignored", "no conversation was recorded"]
    keys = _keys(*feedbacks)
    assert not any({"grad", "outcom"} & k.tokens for k in keys[:5])
    result = build([trial(f"t{i}", 0.0, f) for i, f in enumerate(feedbacks)])
    assert len(result["clusters"]) == 6


def test_inflected_generic_words_are_filtered_after_collapsing():
    """'Failures', 'Mismatched', 'Expectations' collapse to generic words and are dropped."""
    key = _keys("Failures: mismatched expectations on the invoice")[0]
    assert key.tokens == {stem("invoice")}


def test_identifiers_keep_their_underscores():
    """Tool and field names stay whole, quoted or not, and are not stemmed."""
    keys = root_cause_keys(["called `cancel_pending_order` without user_id checks"],
                           [frozenset({"cancel_pending_order"})])
    assert {"cancel_pending_order", "user_id"} <= keys[0].tokens


def test_shared_token_rule_is_half_of_the_smaller_key_and_transitive():
    """Half of the smaller key suffices; chains merge transitively; disjoint keys stay apart."""
    keys = _keys("alpha beta gamma delta", "alpha beta gamma kappa lambda",
                 "kappa lambda omega theta", "zeta eta iota")
    groups = sorted(group_root_cause(keys))
    assert groups == [[0, 1, 2], [3]]


def test_template_words_shared_across_causes_do_not_merge_them():
    """'... was never told to the customer' ends many different causes: two keys that
    share only those template words stay apart, while rephrasings of one cause (sharing
    the cause's own words) still merge."""
    causes = ["the refund amount", "the price difference", "the order status",
              "the delivery date", "the gift card balance", "the pickup location"]
    feedbacks = [f"{c} was never told to the customer" for c in causes]
    feedbacks += ["the customer never heard the refund amount",
                  "price difference never told"]
    groups = sorted(group_root_cause(_keys(*feedbacks)))
    assert groups == [[0, 6], [1, 7], [2], [3], [4], [5]]


def test_overlap_rule_counts_and_weights():
    """Rule 1 (half the smaller key) is necessary; rule 2 needs the shared weight."""
    from capevolve.diagnose.cluster import overlaps

    assert not overlaps(1, 3, 3)
    assert overlaps(1, 2, 5)
    assert not overlaps(2, 4, 4, shared_weight=2.0, weight_a=4.0, weight_b=6.0)
    assert overlaps(2, 4, 4, shared_weight=3.0, weight_a=4.0, weight_b=6.0)


def test_pairs_below_half_stay_apart():
    """One shared token out of four on each side is not enough."""
    keys = _keys("alpha beta gamma delta", "alpha kappa lambda sigma")
    assert sorted(group_root_cause(keys)) == [[0], [1]]


def test_clusters_are_totally_ordered_by_score_lost_size_then_signature():
    """score_lost desc, then size desc, then signature ascending."""
    result = build([trial("t1", 0.5, "refund amount off"), trial("t2", 0.5, "refund amount off"),
                    trial("t3", 0.0, "forgot the seat upgrade"),
                    trial("t4", 0.0, "baggage allowance ignored"),
                    trial("t5", 0.0, "zone transfer ignored")])
    lost = [(c["score_lost"], c["size"], c["signature"]) for c in result["clusters"]]
    assert lost == sorted(lost, key=lambda x: (-x[0], -x[1], x[2]))
    assert result["clusters"][-1]["score_lost"] == 1.0 and len(lost) == 4


def test_score_lost_sums_one_minus_reward_over_failing_trials():
    """Two trials at 0.25 and 0.5 lose 1.25."""
    result = build([trial("t1", 0.25, "refund amount off", n=0),
                    trial("t1", 0.5, "refund amount off", n=1)])
    assert result["clusters"][0]["score_lost"] == 1.25


def test_sanity_check_reports_one_cluster_over_everything():
    """Identical vague feedback on many tasks is reported as too coarse."""
    result = build([trial(f"t{i}", 0.0, "the agent made a policy mistake") for i in range(5)])
    assert any(w.startswith("too coarse") for w in result["sanity"])


def test_sanity_check_reports_one_cluster_per_failing_task():
    """Entirely different feedback per task is reported as too fine."""
    words = ["baggage allowance", "seat upgrade", "meal preference", "insurance waiver"]
    result = build([trial(f"t{i}", 0.0, w) for i, w in enumerate(words)])
    assert any(w.startswith("too fine") for w in result["sanity"])


def test_first_words_mode_keeps_the_old_lexical_key():
    """--cluster first-words groups by the first words, so rephrasings stay apart."""
    result = build([trial("t1", 0.0, "did not confirm the change"),
                    trial("t2", 0.0, "omitted required confirmation step")],
                   mode="first-words")
    assert signatures(result) == ["did not confirm the", "omitted required confirmation step"]


def test_empty_keys_form_one_cluster_of_their_own():
    """Feedback with nothing specific left never merges into the specific clusters."""
    result = build([trial("t1", 0.0, "wrong"), trial("t2", 0.0, ""),
                    trial("t3", 0.0, "refund amount off")])
    assert sorted(signatures(result)) == ["(no specific feedback)", "refund amount"]


def test_clustering_indexes_tokens_instead_of_scanning_pairs():
    """20,000 failures sharing one frequent token cluster quickly (no all-pairs scan)."""
    import time

    keys = _keys(*[f"order status field{i % 97} stale" for i in range(20_000)])
    start = time.perf_counter()
    groups = group_root_cause(keys)
    assert time.perf_counter() - start < 5 and len(groups) == 1


def test_a_shared_run_that_is_the_cause_is_not_stripped_away():
    """'refund amount off' and 'refund amount off by 2' stay one cluster."""
    result = build([trial("t1", 0.0, "refund amount off"),
                    trial("t2", 0.5, "refund amount off by 2")])
    assert signatures(result) == ["refund amount"]
