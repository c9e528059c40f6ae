"""The Python API obeys the CLI's rules (the gate's primitives, no back door), and a
finalized run is closed."""

from __future__ import annotations

import math

import pytest
from fixtures.projects import make_candidate

from capevolve._loop.decide import accept, gate_candidate, reject
from capevolve._loop.evaluate import evaluate
from capevolve._loop.finalize import finalize
from capevolve._store.rundir import RunDir
from capevolve.errors import CandidateError, GateError, RecordError, RunDirError
from capevolve.kinds import SEED_ID, EventKind


def _log_bytes(run: RunDir) -> bytes:
    return run.layout.events.read_bytes()


# -- set_best -------------------------------------------------------------------------------

def test_set_best_of_a_never_gated_candidate_is_refused(run, tmp_path):
    """A snapshotted but never evaluated or gated candidate cannot be made the best."""
    run.snapshot("cand_001", make_candidate(tmp_path / "c1", 1.0))
    before = _log_bytes(run)
    with pytest.raises(GateError, match="no recorded gate"):
        run.set_best("cand_001")
    with pytest.raises(CandidateError, match="cand_404"):
        run.set_best("cand_404")
    assert run.best_id == SEED_ID and _log_bytes(run) == before


@pytest.mark.slow
def test_set_best_after_a_rejecting_gate_is_refused(gated, tmp_path):
    """A candidate whose latest gate against the best said reject cannot be set best."""
    evaluate(gated, make_candidate(tmp_path / "bad", 0.0, overrides={"t000": 0.0}), "val")
    assert gate_candidate(gated, "cand_002")["decision"] != "accept"
    with pytest.raises(GateError, match="said"):
        gated.set_best("cand_002")
    assert gated.best_id == SEED_ID


@pytest.mark.slow
def test_set_best_honours_only_a_current_passing_gate(gated, tmp_path):
    """A passing gate licenses set_best; once the best moved, the old gate no longer does."""
    gated.set_best("cand_001")
    assert RunDir.open(gated.root).best_id == "cand_001"
    event = gated.events(EventKind.SET_BEST)[-1]
    assert event.gate_ts == gated.events(EventKind.GATE)[-1].ts
    with pytest.raises(GateError, match="already the best"):
        gated.set_best("cand_001")
    with pytest.raises(GateError, match="no recorded gate"):
        gated.set_best(SEED_ID)  # the seed was never gated against cand_001


@pytest.mark.slow
def test_an_exploratory_gate_is_no_basis_for_set_best(gated):
    """A gate recorded as exploratory never licenses a move of the best."""
    gate = gated.events(EventKind.GATE)[-1].to_json()
    fields = {k: v for k, v in gate.items() if k not in ("kind", "ts", "pid", "format_version")}
    gated.record(EventKind.GATE, **{**fields, "exploratory": True})
    gated.passing_gate("cand_001")  # the earlier non-exploratory gate still counts
    fields["decision"] = "reject"
    gated.record(EventKind.GATE, **fields)
    gated.record(EventKind.GATE, **{**fields, "decision": "accept", "exploratory": True})
    with pytest.raises(GateError, match="said reject"):
        gated.set_best("cand_001")


# -- log_event ------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", [k.value for k in EventKind if k != EventKind.NOTE])
def test_log_event_refuses_library_kinds(run, kind):
    """Every kind capevolve records itself (accept, set_best, spend, gate, ...) is refused
    from log_event, and nothing is written."""
    before = _log_bytes(run)
    with pytest.raises(RecordError, match="recorded by capevolve itself"):
        run.log_event(kind, candidate_id="seed")
    with pytest.raises(RecordError):
        RunDir.register_event_kind(kind)
    assert _log_bytes(run) == before


def test_log_event_refuses_unregistered_and_bad_kinds(run):
    """An unregistered user kind is refused until registered; malformed kinds never pass."""
    with pytest.raises(RecordError, match="register_event_kind"):
        run.log_event("rarely_used_kind", x=1)
    RunDir.register_event_kind("rarely_used_kind")
    event = run.log_event("rarely_used_kind", x=1)
    assert event.data == {"x": 1}
    assert RunDir.open(run.root).events("rarely_used_kind")[0].data == {"x": 1}
    for bad in ("Bad Kind", "", "x" * 80, "1abc"):
        with pytest.raises(RecordError):
            RunDir.register_event_kind(bad)
    with pytest.raises(RecordError, match="JSON"):
        run.log_event("note", value=object())
    with pytest.raises(RecordError, match="JSON"):
        run.log_event("note", value=math.nan)


@pytest.mark.slow
def test_a_user_event_cannot_move_the_best(gated):
    """A note carrying set_best-like fields is data: best_id and spend do not change."""
    gated.log_event("note", kind_hint="set_best", candidate_id="cand_001", iterations=99)
    reopened = RunDir.open(gated.root)
    assert reopened.best_id == SEED_ID and reopened.spent.iterations == 0


# -- update_spent ---------------------------------------------------------------------------

@pytest.mark.parametrize("increments", [
    {"cost_usd": -5}, {"iterations": -1}, {"wall_s": math.inf}, {"cost_usd": math.nan},
    {"metric_calls": 1.5}, {"tokens": True}, {"dollars": 3}, {"iterations": "1"},
], ids=["negative-cost", "negative-iterations", "inf", "nan", "fractional", "bool",
        "unknown-field", "string"])
def test_update_spent_only_adds(run, increments):
    """Spend only grows by finite, non-negative increments of known fields."""
    before, spent = _log_bytes(run), run.spent.to_dict()
    with pytest.raises(RecordError, match="update_spent"):
        run.update_spent(**increments)
    assert _log_bytes(run) == before and run.spent.to_dict() == spent


def test_update_spent_adds(run):
    """Valid increments add up."""
    run.update_spent(metric_calls=2, cost_usd=0.25)
    run.update_spent(metric_calls=1, wall_s=0.5)
    spent = RunDir.open(run.root).spent
    assert spent.metric_calls == 3 and spent.cost_usd == pytest.approx(0.25)


# -- a finalized run is closed --------------------------------------------------------------

@pytest.mark.slow
def test_a_finalized_run_refuses_evaluate_gate_accept_reject_set_best(gated, tmp_path):
    """After finalize every deciding verb is refused in one line naming final.json, and
    nothing is written."""
    evaluate(gated, make_candidate(tmp_path / "other", 0.5), "val")  # cand_002, not decided
    finalize(gated, spend_test_ids=True)
    before = {p: p.read_bytes() for p in gated.root.rglob("*") if p.is_file()}
    refused = {
        "evaluate": lambda: evaluate(gated, make_candidate(tmp_path / "new", 0.9), "val"),
        "gate": lambda: gate_candidate(gated, "cand_001"),
        "accept": lambda: accept(gated, "cand_001"),
        "reject": lambda: reject(gated, "cand_002"),
        "set_best": lambda: gated.set_best("cand_001"),
    }
    for verb, call in refused.items():
        with pytest.raises(RunDirError, match=r"run is finalized \(final.json\)") as caught:
            call()
        assert verb in str(caught.value) and "\n" not in str(caught.value)
    from typer.testing import CliRunner

    from capevolve.cli.app import app

    for argv in (["evaluate", "--candidate", "cand_002", "--split", "val"],
                 ["gate", "--candidate", "cand_001"], ["accept", "--candidate", "cand_001"],
                 ["reject", "--candidate", "cand_002"]):
        result = CliRunner().invoke(app, [*argv, "--run-dir", str(gated.root)])
        assert result.exit_code == 2, (argv, result.stdout, result.stderr)
        assert "run is finalized (final.json)" in result.stderr
        errors = [line for line in result.stderr.splitlines() if line.startswith("error")]
        assert len(errors) == 1 and "Traceback" not in result.stderr, result.stderr
    after = {p: p.read_bytes() for p in gated.root.rglob("*") if p.is_file()}
    assert after.keys() <= before.keys() | {gated.layout.lock}
    assert all(after[p] == before[p] for p in before if p != gated.layout.lock)
    assert RunDir.open(gated.root).best_id == SEED_ID


@pytest.mark.slow
def test_a_run_being_finalized_is_closed_too(gated):
    """Once the seal is taken (finalize started), the best can no longer move."""
    from capevolve._store import seal

    seal.burn(gated.layout, best_id=SEED_ID, baseline_id=SEED_ID)
    try:
        with pytest.raises(RunDirError, match="being finalized"):
            accept(gated, "cand_001")
    finally:
        seal.release(gated.layout)
    assert gated.best_id == SEED_ID
