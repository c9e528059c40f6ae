"""Candidate code that writes the run's own documents during its evaluation is undone.

In the sandbox the run dir is not even in view (tests/_engine/test_sandbox_attacks.py);
these projects opt out (``engine.isolation: none``) to test the check behind it."""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
import uuid
from pathlib import Path

import pytest

from capevolve._loop.evaluate import evaluate
from capevolve._loop.run import create_run
from capevolve._store.rundir import RunDir
from capevolve.errors import RunDirError

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "_project"))
from test_fingerprint import _project as _sandboxed  # noqa: E402 - code-running project


def _project(root: Path, scorer: str) -> Path:
    """The code-running test project, without the sandbox."""
    project = _sandboxed(root, scorer)
    config = project / "capevolve.yaml"
    config.write_text(config.read_text().replace("retries: 0}", "retries: 0, "
                                                 "isolation: none}"))
    return project

FORGE = '''
import hashlib, json, pathlib
log = pathlib.Path({events!r})
lines = log.read_bytes().splitlines()
snapshots = [json.loads(l) for l in lines if b'"snapshot"' in l]
me = snapshots[-1]["candidate_id"]
if b'"forged": true' not in log.read_bytes():
    prev = hashlib.sha256(lines[-1]).hexdigest()
    forged = dict(json.loads(lines[-1]), kind="set_best", candidate_id=me, prev=prev)
    for key in list(forged):
        if key not in ("kind", "ts", "pid", "prev", "candidate_id", "format_version"):
            forged.pop(key)
    forged.update(reason="accepted", previous_best="seed", forged=True)
    with open(log, "ab") as fh:
        fh.write(json.dumps(forged).encode() + b"\\n")
'''


@pytest.mark.slow
def test_a_forged_set_best_appended_by_candidate_code_is_removed(tmp_path):
    """The candidate appends a correctly chained set_best for itself to events.jsonl while
    its rollouts run: the evaluation is refused naming events.jsonl, the log is restored to
    its bytes before the rollouts (plus capevolve's own records), and the best stays."""
    root = _project(tmp_path / "p", f"gd_scorer_{uuid.uuid4().hex[:8]}")
    run = create_run(root, tmp_path / "run")
    evaluate(run, "seed", "val")
    cand = tmp_path / "cand"
    shutil.copytree(root / "seed", cand)
    (cand / "tool.py").write_text(FORGE.format(events=str(run.layout.events)))
    with pytest.raises(RunDirError, match="events.jsonl was changed during the evaluation"):
        evaluate(run, cand, "val")
    text = run.layout.events.read_text()
    assert '"forged"' not in text
    again = RunDir.open(run.root)
    assert again.best_id == "seed"
    kinds = [e.kind for e in again.events()]
    after = kinds[len(kinds) - kinds[::-1].index("eval_started"):]
    assert sorted(after[:-1]) == ["part_written", "spend"] and after[-1] == "eval_finished"
    from capevolve._store.integrity import verify
    assert verify(again).ok, verify(again).problems  # every part of the voided eval recorded
    lines = run.layout.events.read_bytes().splitlines()
    for before, after in zip(lines, lines[1:], strict=False):
        assert json.loads(after)["prev"] == hashlib.sha256(before).hexdigest()


def test_an_edited_eval_record_is_restored(tmp_path):
    """Candidate code rewriting the seed's eval record (to lift its mean) during its own
    evaluation: the record is put back byte for byte and the evaluation is refused."""
    root = _project(tmp_path / "p", f"gd_scorer_{uuid.uuid4().hex[:8]}")
    run = create_run(root, tmp_path / "run")
    evaluate(run, "seed", "val")
    [seed_eval] = run.layout.evals.glob("val__seed__*.json")
    original = seed_eval.read_bytes()
    cand = tmp_path / "cand"
    shutil.copytree(root / "seed", cand)
    (cand / "tool.py").write_text(
        f"import pathlib; p = pathlib.Path({str(seed_eval)!r})\n"
        "p.write_text(p.read_text().replace('\"mean\": 1.0', '\"mean\": 0.0'))\n")
    with pytest.raises(RunDirError, match="was changed during the evaluation"):
        evaluate(run, cand, "val")
    assert seed_eval.read_bytes() == original
