"""The one rule: only a complete full-split evaluation of purpose gate can decide."""

from __future__ import annotations

from capevolve._policy.gateable import StoredUnits, gate_refusal
from capevolve.kinds import EvalPurpose, EvalStatus
from capevolve.records import EvalRecord, TaskSubset

SPLIT = ("a", "b", "c", "d")


def _record(**fields) -> EvalRecord:
    base = {"eval_id": "val__c__k2", "candidate_id": "c", "split": "val", "n_trials": 2,
            "candidate_hash": "h", "status": EvalStatus.COMPLETE, "started_at": "t"}
    return EvalRecord.model_validate({**base, **fields})


def _units(tasks=SPLIT, trials=(0, 1)) -> StoredUnits:
    return StoredUnits(frozenset(tasks), frozenset(trials))


def test_a_complete_full_gate_evaluation_may_decide():
    assert gate_refusal(_record(), SPLIT, _units()) is None
    assert gate_refusal(_record()) is None  # without rows: the record's own claims


def test_every_informational_kind_is_refused_by_what_the_record_says():
    subset = TaskSubset(count=1, sha256="0" * 64, ids=("a",))
    for fields, words in [({"purpose": EvalPurpose.PROBE}, "probe evaluation"),
                          ({"purpose": EvalPurpose.SCREEN}, "screen evaluation"),
                          ({"purpose": EvalPurpose.CONFIRM}, "confirm evaluation"),
                          ({"task_subset": subset}, "subset of 1 task"),
                          ({"first_trial": 2}, "trials 2..3 only"),
                          ({"refused": "edited"}, "was refused"),
                          ({"status": EvalStatus.INCOMPLETE}, "incomplete, not complete")]:
        why = gate_refusal(_record(**fields), SPLIT, _units())
        assert why is not None and words in why, (fields, why)


def test_an_incomplete_gate_evaluation_is_allowed_only_when_asked():
    record = _record(status=EvalStatus.INCOMPLETE)
    assert gate_refusal(record, SPLIT, _units(trials=(0,)), allow_incomplete=True) is None
    assert gate_refusal(record, SPLIT, _units(), allow_incomplete=False) is not None


def test_the_rows_overrule_a_record_that_claims_the_whole_split():
    """Rows of only some tasks or trials, of tasks outside the split, or of later trials:
    refused, whatever the record claims."""
    record = _record()
    assert "cover 2 of 4" in gate_refusal(record, SPLIT, _units(tasks=("a", "b")))
    assert "1 of 2 trial" in gate_refusal(record, SPLIT, _units(trials=(0,)))
    assert "outside its scoreable split" in gate_refusal(
        record, SPLIT, _units(tasks=(*SPLIT, "x")))
    assert "outside trials 0..1" in gate_refusal(record, SPLIT, _units(trials=(0, 1, 2)))
    assert "outside trials 0..1" in gate_refusal(record, SPLIT, _units(trials=(2, 3)))


def test_exclusions_are_part_of_the_denominator_rule():
    """Excluded tasks have no rows; an exclusion outside the split is refused."""
    record = _record(excluded=1, excluded_tasks={"d": "no expected value"})
    assert gate_refusal(record, SPLIT, _units(tasks=("a", "b", "c"))) is None
    assert gate_refusal(record, SPLIT, _units()) is not None  # d has rows yet is excluded
    bad = _record(excluded=1, excluded_tasks={"zz": "no expected value"})
    assert "not in its split" in gate_refusal(bad, SPLIT, _units())
