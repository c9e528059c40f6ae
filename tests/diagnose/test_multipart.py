"""Multi-part feedback: one cause per failing part, shared lost score, primary/secondary."""

from __future__ import annotations

from diagnose.diag_support import build, trial

PRE = "[scorer] reward 1 = state AND messages; 0.5 = one of the two."


def _retail_like(task: str, db: str, messages: str, n: int = 0, reward: float = 0.0,
                 parts: dict | None = None) -> object:
    return trial(task, reward, f"{PRE}\ndatabase: {db}\nmessages: {messages}", n=n,
                 score_parts=parts)


def test_each_failing_part_is_its_own_cause_and_a_task_sits_in_two_clusters():
    """db and messages parts of one feedback land in different clusters; the task is in
    both, and each entry names its primary and secondary cluster."""
    ok_db, ok_msg = "the end state matches the reference.", "every fact was told."
    trials = [
        _retail_like("t1", "the refund went to a gift card instead of the original card.",
                     "the write was made without asking the customer to confirm.",
                     parts={"db": 0.0, "messages": 0.0}),
        _retail_like("t2", "the refund went to a gift card instead of the original card.",
                     ok_msg, reward=0.5, parts={"db": 0.0, "messages": 1.0}),
        _retail_like("t3", ok_db,
                     "the write was made without asking the customer to confirm.",
                     reward=0.5, parts={"db": 1.0, "messages": 0.0}),
        trial("g", 1.0, f"{PRE}\ndatabase: {ok_db}\nmessages: {ok_msg}",
              score_parts={"db": 1.0, "messages": 1.0})]
    result = build(trials)
    clusters = {c["signature"]: c for c in result["clusters"]}
    assert len(clusters) == 2
    assert sorted(sorted(c["tasks"]) for c in clusters.values()) == [["t1", "t2"], ["t1", "t3"]]
    assert {p for c in clusters.values() for p in c["parts"]} == {"database", "messages"}
    t1 = next(e for e in result["reflective_dataset"] if e["task_id"] == "t1")
    assert len(t1["causes"]) == 2 and t1["secondary_cluster"] is not None
    assert {t1["cluster"], t1["secondary_cluster"]} == set(clusters)
    t2 = next(e for e in result["reflective_dataset"] if e["task_id"] == "t2")
    assert t2["secondary_cluster"] is None and [c["part"] for c in t2["causes"]] == ["database"]


def test_lost_score_is_shared_and_adds_up_to_the_total():
    """A 0-reward trial in two clusters gives each 0.5; the clusters sum to the total lost."""
    trials = [_retail_like("t1", "the refund went to a gift card.", "the amount was never told.",
                           parts={"db": 0.0, "messages": 0.0}),
              _retail_like("t2", "the refund went to a gift card.", "fine.", reward=0.5,
                           parts={"db": 0.0, "messages": 1.0})]
    result = build(trials)
    lost = {c["signature"]: c["score_lost"] for c in result["clusters"]}
    assert sorted(lost.values()) == [0.5, 1.0]
    assert abs(sum(lost.values()) - 1.5) < 1e-9


def test_sentences_inside_one_part_are_separate_causes():
    """'messages: A. B.' holds two causes; the passing part adds none."""
    trials = [trial(f"t{i}", 0.5, "database: the end state matches the reference.\n"
                    "messages: the write was made without asking the customer to confirm. "
                    "the refunded amount was never told.",
                    score_parts={"db": 1.0, "messages": 0.0}) for i in range(2)]
    result = build(trials)
    assert len(result["clusters"]) == 2
    assert all(len(e["causes"]) == 2 for e in result["reflective_dataset"])
    assert not any("reference" in c["text"] for e in result["reflective_dataset"]
                   for c in e["causes"])


def test_pass_statements_of_passing_trials_are_not_causes():
    """Without score parts, a sentence that passing trials' feedback also says is dropped."""
    trials = [trial("t1", 0.0, "Refund amount wrong. Order lookup fine."),
              trial("t2", 0.0, "Seat never assigned. Order lookup fine."),
              trial("g", 1.0, "Refund amount right. Order lookup fine.")]
    result = build(trials)
    texts = {c["text"] for e in result["reflective_dataset"] for c in e["causes"]}
    assert texts == {"Refund amount wrong.", "Seat never assigned."}


def test_semicolon_separated_labelled_parts_on_one_line():
    """'policy: ...; reply: ...' splits at the labels named by the score parts."""
    result = build([trial("t1", 0.0, "policy: identity never verified; reply: fare not told",
                          score_parts={"policy": 0.0, "reply": 0.0}),
                    trial("t2", 0.0, "policy: identity never verified",
                          score_parts={"policy": 0.0, "reply": 1.0})])
    entry = result["reflective_dataset"][0]
    assert [c["part"] for c in entry["causes"]] == ["policy", "reply"]


def test_malformed_score_parts_and_labels_are_missing_data_not_errors():
    """Score parts that are not JSON, not an object, or hold non-numbers are ignored; the
    feedback is still split by the labels failures share."""
    trials = [trial("t1", 0.0, "db: state wrong\nmsg: amount untold", score_parts=None),
              trial("t2", 0.0, "db: state wrong\nmsg: amount untold"),
              trial("t3", 0.0, "no labels here at all")]
    bad = [trial("t4", 0.0, "db: state wrong"), trial("t5", 0.0, "db: state wrong")]
    bad = [t._replace(score_parts=raw)
           for t, raw in zip(bad, ["{not json", '["db", 0]'], strict=True)]
    assert bad[0].score_parts == "{not json"
    result = build(trials + bad)
    entry = next(e for e in result["reflective_dataset"] if e["task_id"] == "t1")
    assert [c["part"] for c in entry["causes"]] == ["db", "msg"]
    assert result["failing_total"] == 5


def test_the_one_failing_score_part_is_half_of_an_unlabelled_units_site():
    """Without labels, a unit whose trial has exactly one part short carries that part:
    borderline wording of different parts stays apart, the same wording of one part merges."""
    a = "date of the flight was wrong for the passenger"
    b = "fare difference of the flight for the passenger"
    unknown = build([trial("t1", 0.5, a), trial("t2", 0.5, b)])
    assert len(unknown["clusters"]) == 1  # the words alone are borderline: they merge
    apart = build([trial("t1", 0.5, a, score_parts={"itinerary": 0.0, "reply": 1.0}),
                   trial("t2", 0.5, b, score_parts={"itinerary": 1.0, "reply": 0.0})])
    together = build([trial("t1", 0.5, a, score_parts={"itinerary": 0.0, "reply": 1.0}),
                      trial("t2", 0.5, b, score_parts={"itinerary": 0.0, "reply": 1.0})])
    assert len(apart["clusters"]) == 2 and len(together["clusters"]) == 1
    assert not any("@" in c["signature"] or "@" in "".join(c["sites"])
                   for c in together["clusters"])


def test_bracket_tags_after_a_bullet_mark_are_part_labels():
    """'- [billing] ...' opens the billing part as 'billing: ...' would; a tag that names
    no score part is text of the part before."""
    feedback = ("- [billing] rate not re-quoted after the date change.\n"
                "- [guest] reply omits the updated confirmation code.\n"
                "- [note] seen by the night shift.")
    result = build([trial(f"t{i}", 0.0, feedback, score_parts={"billing": 0.0, "guest": 0.0})
                    for i in range(2)])
    entry = result["reflective_dataset"][0]
    assert [(c["part"], c["text"]) for c in entry["causes"]] == [
        ("billing", "rate not re-quoted after the date change."),
        ("guest", "reply omits the updated confirmation code."),
        ("guest", "- [note] seen by the night shift.")]
