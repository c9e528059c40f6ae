"""One cause reworded from trial to trial: clusters a task's trials alternate between are
merged, and only on that evidence."""

from __future__ import annotations

from diagnose.diag_support import build, trial

A = "Insurance eligibility was not verified before the visit."
B = "Coverage check skipped for this patient's plan."
OTHER = ["The reply quoted the wrong clinic address.", "Fasting instructions were left out."]


def _clusters(result: dict) -> list[list[str]]:
    return sorted(sorted(c["tasks"]) for c in result["clusters"])


SHORT = {"policy": 0.0, "reply": 1.0}


def _alternating(n_tasks: int, parts: dict | None = SHORT) -> list:
    """Tasks t0.. failing with wording A on trial 0 and B on trial 1."""
    out = []
    for i in range(n_tasks):
        out += [trial(f"t{i}", 0.5, A, n=0, score_parts=parts),
                trial(f"t{i}", 0.5, B, n=1, score_parts=parts)]
    return out


def _filler() -> list:
    return [trial(f"o{i}", 0.5, OTHER[i % 2]) for i in range(4)]


def test_two_wordings_a_tasks_trials_alternate_between_are_one_cluster():
    result = build(_alternating(3) + _filler())
    assert ["t0", "t1", "t2"] in _clusters(result)
    [merged] = [c for c in result["clusters"] if "t0" in c["tasks"]]
    assert merged["size"] == 6 and merged["units"] == 6


def test_wordings_said_together_in_one_trial_stay_two_causes():
    """Once a trial carries both, they are two causes, however the others alternate."""
    both = trial("t9", 0.0, f"{A} {B}", n=0, score_parts=SHORT)
    result = build(_alternating(3) + [both] + _filler())
    assert ["t0", "t1", "t2", "t9"] in _clusters(result)
    assert len([c for c in result["clusters"] if "t9" in c["tasks"]]) == 2


def test_one_alternating_task_or_a_small_share_is_not_enough():
    """One task alternating is chance; two of the larger cluster's twelve tasks too."""
    assert len([c for c in build(_alternating(1) + _filler())["clusters"]
                if "t0" in c["tasks"]]) == 2
    trials = _alternating(2) + [trial(f"a{i}", 0.5, A, score_parts=SHORT)
                                for i in range(10)] + _filler()
    assert len([c for c in build(trials)["clusters"] if "t0" in c["tasks"]]) == 2


def test_without_part_labels_the_alternating_trials_must_lose_the_same_part():
    """Unlabelled feedback: the score part that fell short is the site; trials that lost
    different parts, or a feedback with no score parts, say nothing."""
    assert _clusters(build(_alternating(3) + _filler())).count(["t0", "t1", "t2"]) == 1
    assert _clusters(build(_alternating(3, None) + _filler())).count(["t0", "t1", "t2"]) == 2
    trials = []
    for i in range(3):
        trials += [trial(f"t{i}", 0.5, A, n=0, score_parts={"policy": 0.0, "reply": 1.0}),
                   trial(f"t{i}", 0.5, B, n=1, score_parts={"policy": 1.0, "reply": 0.0})]
    assert _clusters(build(trials + _filler())).count(["t0", "t1", "t2"]) == 2


def test_labelled_parts_are_their_own_site():
    """With part labels the label is the site: the same part alternating is enough."""
    trials = []
    for i in range(3):
        trials += [trial(f"t{i}", 0.5, f"policy: {A}", n=0, score_parts={"db": 0.0}),
                   trial(f"t{i}", 0.5, f"policy: {B}", n=1, score_parts={"db": 0.0})]
    assert ["t0", "t1", "t2"] in _clusters(build(trials + _filler()))


def test_a_template_scorer_that_never_alternates_is_left_alone():
    """Each task always worded the same way: nothing to merge."""
    trials = [trial(f"a{i}", 0.5, A, n=n, score_parts=SHORT) for i in range(3)
              for n in range(2)]
    trials += [trial(f"b{i}", 0.5, B, n=n, score_parts=SHORT) for i in range(3)
               for n in range(2)]
    clusters = _clusters(build(trials + _filler()))
    assert ["a0", "a1", "a2"] in clusters and ["b0", "b1", "b2"] in clusters


BOTH = {"value": 0.0, "scope": 0.0}
SCOPE = "The region filter also counted the partner channel's rows."


def _two_causes(n_tasks: int, lost: dict = BOTH, second: tuple[str, str] = (SCOPE, SCOPE)
                ) -> list:
    """Tasks t0.. losing two parts on two trials: a shared scope sentence (or ``second``)
    beside wording A on trial 0 and B on trial 1, unlabelled."""
    return [trial(f"t{i}", 0.0, f"{text} {other}", n=n, score_parts=lost)
            for i in range(n_tasks)
            for n, (text, other) in enumerate(((A, second[0]), (B, second[1])))]


def test_trials_that_lost_the_same_parts_and_differ_by_one_wording_are_one_cause():
    """Unlabelled feedback, two causes a trial: what two trials of a task do not share,
    one wording each, is one cause reworded; the shared sentence stays its own cause."""
    clusters = _clusters(build(_two_causes(3) + _filler()))
    assert clusters.count(["t0", "t1", "t2"]) == 2  # A and B merged; the scope sentence


def test_trials_that_lost_different_parts_or_differ_by_two_wordings_say_nothing():
    """The guard: trials of a task that lost other parts, or that share no cause (two
    wordings left on each side), vouch for no merge."""
    other = "Returns were left in the total."
    mixed = [trial(f"t{i}", 0.0, f"{A} {SCOPE}", n=0, score_parts=BOTH) for i in range(3)]
    mixed += [trial(f"t{i}", 0.0, f"{B} {SCOPE}", n=1,
                    score_parts={"value": 0.0, "scope": 0.0, "format": 0.0})
              for i in range(3)]
    assert _clusters(build(mixed + _filler())).count(["t0", "t1", "t2"]) == 3
    apart = _two_causes(3, second=(SCOPE, other))
    assert _clusters(build(apart + _filler())).count(["t0", "t1", "t2"]) == 4
