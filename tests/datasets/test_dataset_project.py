"""A dataset project end to end on the local engine: exclusions, score parts, judge error
rows, a judge outage leaving the evaluation incomplete, the split assertion, the fingerprint."""

import importlib.util
import json
import shutil
import socket
from pathlib import Path

import pytest
from fixtures.chat_server import ChatServer, Sleep, completion

from capevolve._loop.evaluate import evaluate
from capevolve._loop.run import create_run
from capevolve._store.evals_means import task_means_of
from capevolve._store.rollouts.query import RolloutStore
from capevolve.errors import RunDirError

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "benchmarks" / "dataset_qa"


def _verdict():
    spec = importlib.util.spec_from_file_location("dataset_qa_judge",
                                                  EXAMPLE / "judge_server.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.verdict


VERDICT = _verdict()


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _project(tmp_path: Path, port: int) -> Path:
    root = tmp_path / "qa"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".capevolve", "__pycache__"))
    config = root / "capevolve.yaml"
    config.write_text(config.read_text().replace("127.0.0.1:8931", f"127.0.0.1:{port}"))
    return root


class Switch:
    """A judge that answers by the example's rule, breaks the schema on the question
    ``broken``, and is unreachable (answers after the client's deadline) on Norway while
    ``down`` (3 s, past the 2 s deadline the outage test sets)."""

    def __init__(self) -> None:
        self.down = False
        self.broken = "nothing is broken"

    def __call__(self, body):
        user = body["messages"][-1]["content"]
        if self.broken in user:
            return completion("Stockholm is right, I would say 1.")
        if "capital of Norway" in user and self.down:
            return Sleep(3.0, completion('{"score": 1, "justification": "late"}'))
        return VERDICT(body)


@pytest.fixture
def judged(tmp_path):
    port = _port()
    switch = Switch()
    with ChatServer(default=switch, port=port) as server:
        yield _project(tmp_path, port), switch, server


def _rows(run, eval_id):
    _, rows = RolloutStore(run.layout).query(
        f"SELECT task_id, reward, score_parts, error FROM rollouts WHERE eval_id = '{eval_id}'")
    return rows


@pytest.mark.slow
def test_a_dataset_project_evaluates_with_parts_exclusions_and_error_rows(judged, tmp_path):
    project, switch, server = judged
    run = create_run(project, tmp_path / "run")
    ids = {s: set(run.splits.ids(s)) for s in ("train", "val", "test")}
    lines = [json.loads(x) for x in (project / "data.jsonl").read_text().splitlines()]
    assert set().union(*ids.values()) == {x["id"] for x in lines}  # val + test + train
    assert sum(len(v) for v in ids.values()) == len(lines)
    broken = next(x for x in lines if x["id"] in ids["train"] and x["answer"])
    switch.broken = broken["question"]
    records = {}
    for split in ("train", "val"):
        records[split] = evaluate(run, project / "improved_capability", split)
    unlabeled = {x["id"] for x in lines if not x["answer"]}
    broken_id = broken["id"]
    for split, record in records.items():
        excluded = unlabeled & ids[split]
        assert set(record["excluded_tasks"]) == excluded
        assert record["excluded"] == len(excluded)
        rows = _rows(run, record["eval_id"])
        assert not {r[0] for r in rows} & excluded  # never run, never a 0
        for task_id, reward, parts, error in rows:
            if task_id == broken_id:
                assert reward is None and "JudgeError: judge answer breaks the schema" in error
            else:
                parts = json.loads(parts)
                assert set(parts) == {"match", "judge"}
                assert reward == pytest.approx((2 * parts["match"] + parts["judge"]) / 3)
        means = task_means_of(run, record)
        assert means and broken_id not in means
    every_excluded = sum(r["excluded"] for r in records.values())
    assert every_excluded >= 1, "the example must exclude a datapoint in train or val"
    prompts = [m for p in server.prompts for m in p if m["role"] == "system"]
    assert prompts and all("Questions ask for the capital" in m["content"] for m in prompts)


@pytest.mark.slow
def test_an_unreachable_judge_leaves_the_evaluation_incomplete_until_resumed(judged,
                                                                             tmp_path):
    project, switch, _ = judged
    config = project / "capevolve.yaml"  # the 2 s deadline only here: in the other tests
    # a judge slowed by a loaded machine must not read as unreachable
    config.write_text(config.read_text().replace("timeout_s: 10", "timeout_s: 2"))
    run = create_run(project, tmp_path / "run")
    norway = "q010"
    split = next(s for s in ("train", "val") if norway in run.splits.ids(s))
    switch.down = True
    first = evaluate(run, project / "improved_capability", split)
    assert first["status"] == "incomplete"
    assert "judge was unreachable on 2 unit(s)" in first["incomplete_reason"]
    switch.down = False
    second = evaluate(run, project / "improved_capability", split)
    assert second["status"] == "complete" and norway in task_means_of(run, second)


def test_an_edited_rubric_or_dataset_stops_the_run(judged, tmp_path):
    project, _, _ = judged
    run = create_run(project, tmp_path / "run")
    config = project / "capevolve.yaml"
    config.write_text(config.read_text().replace("Score 1 when", "Score 1 only when"))
    with pytest.raises(RunDirError, match="capevolve.yaml changed since the run started"):
        evaluate(run, project / "improved_capability", "val")
