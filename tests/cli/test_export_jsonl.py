"""capevolve export jsonl --eval ID (and --format jsonl): one line per datapoint, id first,
scores recomputed from the stored rows, excluded datapoints named, test never exported."""

import json

import pytest
from cli.cli_support import describe, invoke, no_traceback, one_json

import capevolve
from capevolve._store.evals_means import task_means_of
from capevolve._store.rundir import RunDir


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("export")
    capevolve.init_project(root / "proj", kind="dataset")
    data = (root / "proj" / "data.jsonl").read_text().splitlines()
    extra = [json.dumps({"id": f"u{i}", "question": f"q{i}?", "answer": ""}) for i in range(6)]
    (root / "proj" / "data.jsonl").write_text("\n".join(data + extra) + "\n")
    run = capevolve.create_run(root / "proj", root / "run")
    capevolve.evaluate(run, "seed", "train")
    return run


@pytest.mark.slow
def test_both_spellings_write_one_line_per_datapoint(run, tmp_path):
    record = json.loads((run.root / "evals" / "train__seed__k1.json").read_text())
    for args, out in ((["export", "jsonl"], tmp_path / "a.jsonl"),
                      (["export", "--format", "jsonl"], tmp_path / "b.jsonl")):
        payload = one_json(invoke(*args, "--run-dir", run.root, "--eval", "train__seed__k1",
                                  "--out", out, "--json"))
        lines = [json.loads(x) for x in out.read_text().splitlines()]
        assert payload["lines"] == len(lines) == len(run.splits.ids("train"))
        assert all(next(iter(line)) == "id" for line in lines)
        scored = {x["id"]: x["score"] for x in lines if x["score"] is not None}
        assert scored == pytest.approx(task_means_of(RunDir.open(run.root), record))
        excluded = {x["id"]: x["excluded"] for x in lines if "excluded" in x}
        assert excluded == record["excluded_tasks"] and excluded
        assert payload["excluded"] == record["excluded"] == len(excluded)
        assert all({"input", "output", "justification", "parts"} <= set(x) for x in lines)
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()


@pytest.mark.parametrize(("args", "needle"), [
    (["export", "--format", "csv", "--eval", "train__seed__k1"], "--format must be jsonl"),
    (["export", "jsonl", "--eval", "nope"], "evaluation 'nope'"),
    (["export", "--format", "jsonl"], "--eval ID"),
])
def test_bad_input_is_one_line_and_exit_2(run, args, needle):
    result = invoke(*args, "--run-dir", run.root)
    assert result.exit_code == 2, describe(result)
    no_traceback(result)
    assert needle in result.stderr and result.stderr.count("\n") == 1


def test_a_test_split_evaluation_is_never_exported(run, tmp_path):
    capevolve.finalize(run, spend_test_ids=True)
    test_eval = next(p.stem for p in (run.root / "evals").glob("test__*.json"))
    result = invoke("export", "jsonl", "--run-dir", run.root, "--eval", test_eval,
                    "--out", tmp_path / "t.jsonl")
    assert result.exit_code == 2 and "never exported" in result.stderr, describe(result)
    assert not (tmp_path / "t.jsonl").exists()
