"""Evaluation records are one-line canonical JSON; indented records of older runs still read.

The one-line form (json's C encoder) holds the same document as the indented one: same
keys in the same sorted order, the same values. Every reader parses JSON, so both forms
load to the same record, pass the integrity check, and a hand edit of either is caught.
"""

from __future__ import annotations

import json

from fixtures.projects import make_candidate, make_project

from capevolve._loop.evaluate import evaluate
from capevolve._loop.run import create_run
from capevolve._store import integrity, jsonfiles
from capevolve._store.evals import all_evals, find_eval
from capevolve._store.rundir import RunDir


def _evaluated(tmp_path):
    tasks = [{"id": f"t{i:03d}", "cluster": f"c{i % 3}"} for i in range(24)]
    run = create_run(make_project(tmp_path / "p", tasks, trials=2), tmp_path / "run")
    record = evaluate(run, make_candidate(tmp_path / "c", 0.5), "val")
    return run, record, run.layout.eval_json(record["eval_id"])


def test_the_record_is_one_canonical_line_with_the_indented_form_s_content(tmp_path):
    run, record, path = _evaluated(tmp_path)
    text = path.read_text(encoding="utf-8")
    assert text.count("\n") == 1 and text.endswith("}\n")
    data = json.loads(text)
    assert data == record and list(data) == sorted(data)
    assert text == jsonfiles.dumps(data, None) + "\n"  # sorted keys, byte for byte
    assert json.loads(jsonfiles.dumps(data)) == data  # the indented form, same document
    assert integrity.verify(RunDir(run.root)).ok


def test_an_indented_record_of_an_older_run_reads_the_same_and_verifies(tmp_path):
    run, record, path = _evaluated(tmp_path)
    path.write_text(jsonfiles.dumps(json.loads(path.read_text())) + "\n", encoding="utf-8")
    assert path.read_text().count("\n") > 10  # the old, indented form
    again = RunDir(run.root)
    assert find_eval(again, record["eval_id"]).to_json() == record
    assert [r.eval_id for r in all_evals(again)] == [record["eval_id"]]
    assert integrity.verify(again).ok
    assert evaluate(again, record["candidate_id"], "val") == record  # complete: as it is


def test_a_hand_edited_one_line_record_is_still_caught(tmp_path):
    run, record, path = _evaluated(tmp_path)
    data = json.loads(path.read_text())
    path.write_text(jsonfiles.dumps({**data, "mean": 0.99}, None) + "\n", encoding="utf-8")
    result = integrity.verify(RunDir(run.root))
    assert not result.ok
    assert any("edited by hand" in p.what for p in result.problems)
