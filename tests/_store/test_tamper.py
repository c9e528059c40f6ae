"""Tamper-evidence (events and Parquet parts): every forgery is done by hand on the files,
and the next command refuses the run in one line naming the first bad record or file."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from fixtures.projects import make_candidate, make_project

import capevolve
from capevolve._loop.decide import accept, gate_candidate
from capevolve._loop.evaluate import evaluate
from capevolve._loop.finalize import finalize
from capevolve._loop.run import create_run
from capevolve._store import integrity
from capevolve._store.rundir import RunDir
from capevolve.errors import RunDirError, TestSealError
from capevolve.kinds import EventKind

pytestmark = pytest.mark.slow


def _lines(run: RunDir) -> list[bytes]:
    return run.layout.events.read_bytes().splitlines()


def _append_chained(run: RunDir, kind: str, keep_mac: bool = False, **changes) -> int:
    """Append a copy of the last ``kind`` event, changed, with a correct hash chain (what a
    forger who read the chain rule would write). Returns its line number."""
    lines = _lines(run)
    template = next(json.loads(line) for line in reversed(lines)
                    if json.loads(line)["kind"] == kind)
    template.update(changes, prev=hashlib.sha256(lines[-1]).hexdigest())
    if not keep_mac:
        template.pop("mac")
    with open(run.layout.events, "ab") as fh:
        fh.write(json.dumps(template, sort_keys=True).encode() + b"\n")
    return len(lines) + 1


@pytest.fixture
def rejected(tmp_path) -> RunDir:
    """Seed and a worse candidate evaluated on val; the gate said reject."""
    run = create_run(make_project(tmp_path / "p", 16, quality=0.9, trials=2), tmp_path / "run")
    evaluate(run, "seed", "val")
    evaluate(run, make_candidate(tmp_path / "bad", 0.0), "val")
    assert gate_candidate(run, "cand_001")["decision"] == "reject"
    return run


@pytest.mark.parametrize("keep_mac", [False, True], ids=["no-mac", "stale-mac"])
def test_a_chained_gate_accept_appended_by_hand_is_refused(rejected, keep_mac):
    """An appended gate event that says accept, correctly chained (with no mac, or the
    mac of the line it was copied from), does not make accept succeed."""
    line = _append_chained(rejected, "gate", keep_mac, decision="accept", reasons=[])
    with pytest.raises(RunDirError, match=rf"events\.jsonl:{line}: forged"):
        capevolve.accept(rejected.root, "cand_001")
    log = RunDir(rejected.root)._log
    with pytest.raises(RunDirError, match="forged"):
        log.events()
    assert log.verified()[-1].kind == EventKind.GATE  # the history up to the forgery
    assert EventKind.ACCEPT not in [e.kind for e in log.verified()]


def test_a_chained_set_best_appended_by_hand_is_refused(rejected):
    """An appended set_best (correct chain) does not move the best: status refuses."""
    line = _append_chained(rejected, "set_best", candidate_id="cand_001", reason="accepted")
    with pytest.raises(RunDirError, match=rf"events\.jsonl:{line}: forged"):
        capevolve.status(rejected.root)


def _forge_val_part(run: RunDir, candidate: str, reward: float) -> Path:
    """A pyarrow-written part: a real part's rows with every reward set, under a new name."""
    real = min(run.layout.partition("val", candidate).glob("*.parquet"))
    table = pq.read_table(real)
    table = table.set_column(table.schema.get_field_index("reward"), "reward",
                             pc.add(pc.multiply(table["reward"], 0.0), reward))
    forged = real.with_name(real.name.replace("-0000", "-9999"))
    pq.write_table(table, forged)
    return forged


def test_a_pyarrow_written_val_part_is_refused_before_the_gate(rejected):
    """Rows written with pyarrow into the candidate's partition would pass the gate; the
    next command (the gate) refuses the run naming the part."""
    forged = _forge_val_part(rejected, "cand_001", 1.0)
    rel = forged.relative_to(rejected.root).as_posix()
    with pytest.raises(RunDirError, match=rf"{rel}: not recorded in events\.jsonl"):
        capevolve.gate(rejected.root, "cand_001")


def test_corrupted_bytes_in_a_part_are_noticed(rejected):
    """200 bytes overwritten inside a part (same size, mtime put back) are noticed: the
    cached hash is keyed on ctime too."""
    run = RunDir.open(rejected.root)  # hashes once, caches
    part = min(run.layout.partition("val", "seed").glob("*.parquet"))
    info = part.stat()
    with open(part, "r+b") as fh:
        fh.seek(info.st_size // 3)
        fh.write(os.urandom(200))
    os.utime(part, ns=(info.st_atime_ns, info.st_mtime_ns))
    rel = part.relative_to(run.root).as_posix()
    with pytest.raises(RunDirError, match=rf"{rel}: its sha256 differs"):
        RunDir.open(rejected.root)


def test_verification_is_cached_by_stat(rejected):
    """A second verification hashes nothing (sizes and hashes cached by size, mtime, ctime
    and inode); touching a part makes it hash that one again."""
    first = integrity.verify(RunDir(rejected.root))
    assert first.ok and first.parts >= 2
    again = integrity.verify(RunDir(rejected.root))
    assert again.ok and again.hashed == 0
    os.utime(min(rejected.layout.rollouts.rglob("*.parquet")))
    assert integrity.verify(RunDir(rejected.root)).hashed == 1


def test_events_cut_from_the_end_are_refused(rejected):
    """Removing the last events leaves a valid signed chain; the head mirrored in the
    project's .capevolve/heads/ tells."""
    lines = _lines(rejected)
    rejected.layout.events.write_bytes(b"\n".join(lines[:-3]) + b"\n")
    with pytest.raises(RunDirError, match=r"events\.jsonl: ends after \d+ events but .*"
                                          r"heads.* records \d+: events were removed"):
        RunDir.open(rejected.root)


def test_a_deleted_part_is_refused(rejected):
    part = min(rejected.layout.partition("val", "cand_001").glob("*.parquet"))
    part.unlink()
    rel = part.relative_to(rejected.root).as_posix()
    with pytest.raises(RunDirError, match=rf"{rel}: recorded in events\.jsonl but missing"):
        RunDir.open(rejected.root)


# -- after finalize ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def finalized_template(tmp_path_factory):
    """A finalized run (best cand_001 over the seed); tests work on copies of it."""
    base = tmp_path_factory.mktemp("finalized")
    run = create_run(make_project(base / "p", 20, quality=0.0, trials=2), base / "run")
    evaluate(run, "seed", "val")
    evaluate(run, make_candidate(base / "good", 1.0), "val")
    assert gate_candidate(run, "cand_001")["decision"] == "accept"
    accept(run, "cand_001")
    final = finalize(run, spend_test_ids=True)
    return run.root, final


@pytest.fixture
def finalized(finalized_template, tmp_path) -> RunDir:
    root, _ = finalized_template
    shutil.copytree(root, tmp_path / "copy", symlinks=True)
    run = RunDir.open(tmp_path / "copy")  # a copy on the same machine verifies
    return run


def test_forged_test_rows_after_finalize_are_refused(finalized):
    """Rewriting the seed's test part with pyarrow (every reward 0) would change the
    report's delta; the report refuses the run naming the part."""
    part = min(finalized.layout.partition("test", "seed").glob("*.parquet"))
    table = pq.read_table(part)
    table = table.set_column(table.schema.get_field_index("reward"), "reward",
                             pc.multiply(table["reward"], 0.0))
    pq.write_table(table, part)
    rel = part.relative_to(finalized.root).as_posix()
    with pytest.raises(RunDirError, match=rf"{rel}: .*(differs|bytes)"):
        capevolve.open_run(finalized.root)


def test_added_test_rows_after_finalize_are_refused(finalized):
    part = min(finalized.layout.partition("test", "cand_001").glob("*.parquet"))
    shutil.copy(part, part.with_name(part.name.replace("-0000", "-8888")))
    with pytest.raises(RunDirError, match=r"split=test/.*-8888.*: not recorded"):
        capevolve.status(finalized.root)


def test_a_hand_edited_final_json_is_refused(finalized):
    data = json.loads(finalized.layout.final.read_text())
    data["delta"] = 0.999
    finalized.layout.final.write_text(json.dumps(data))
    with pytest.raises(RunDirError, match=r"final\.json: differs from the final\.json "
                                          "finalize wrote"):
        capevolve.status(finalized.root)


def test_deleting_seal_and_final_and_moving_test_rows_cannot_buy_a_second_test(finalized):
    """Deleting seal.json and final.json and moving the test rows aside would let test be
    scored again: the run is refused on open and finalize does not run."""
    finalized.layout.seal.chmod(0o644)
    finalized.layout.seal.unlink()
    finalized.layout.final.unlink()
    shutil.move(finalized.layout.split_rollouts("test"), finalized.root / "elsewhere")
    with pytest.raises(RunDirError, match=r"split=test/.*: recorded in events\.jsonl but "
                                          "missing"):
        capevolve.finalize(finalized.root, engine="local", spend_test_ids=True)
    assert not finalized.layout.final.exists()
    assert not finalized.layout.split_rollouts("test").exists()
    found = capevolve.verify(finalized.root)
    kinds = {p.kind for p in found.problems}
    assert {"document", "part_missing"} <= kinds and not found.ok
    assert any(line.startswith("seal.json: missing, though finalize started")
               for line in found.lines)
    assert any(line.startswith("final.json: missing") for line in found.lines)
    with pytest.raises((RunDirError, TestSealError)):
        finalize(RunDir(finalized.root), spend_test_ids=True)  # even the store verb, past open


def test_without_the_key_only_the_chain_is_checked_and_writes_are_refused(rejected):
    """A run dir on a machine without its key (the key file moved away) still opens and
    verifies its chain, says signatures were not checked, and refuses to write."""
    from capevolve._store import signing

    key = signing.key_path(RunDir.open(rejected.root)._log.key_id)
    key.rename(key.with_suffix(".away"))
    try:
        run = RunDir.open(rejected.root)
        result = integrity.verify(run)
        assert result.ok and any("signatures not checked" in n for n in result.notes)
        with pytest.raises(RunDirError, match="writes refused: the run's signing key"):
            run.log_event("note", text="x")
        line = _append_chained(rejected, "gate", decision="accept")
        assert RunDir.open(rejected.root).events()[-1].decision == "accept"  # the stated limit
    finally:
        key.with_suffix(".away").rename(key)
    with pytest.raises(RunDirError, match=rf"events\.jsonl:{line}: forged"):
        RunDir.open(rejected.root)  # with the key back, the forged line is told apart


@pytest.mark.parametrize("field,value", [("mean", 0.99), ("n_scored", 1)])
def test_an_edited_evaluation_record_is_refused(rejected, field, value):
    """evals/*.json edited by hand (another mean, another count of scored tasks)
    contradicts the evaluation's eval_finished event: refused naming the file."""
    path = rejected.layout.eval_json("val__cand_001__k2")
    data = json.loads(path.read_text())
    data[field] = value
    path.write_text(json.dumps(data))
    with pytest.raises(RunDirError, match=r"evals/val__cand_001__k2\.json: differs from its "
                                          r"eval_finished event \(event \d+"):
        capevolve.status(rejected.root)
