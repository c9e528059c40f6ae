"""A candidate that carries what it must never carry is refused before any rollout, as an
indecisive gate naming file, line and kind, never the value: a val task's gold answer
pasted into its prompt, a test task's id named in its code, a long span of a val input.
A value many tasks share (a label) and the project's ignore list do not count."""

from __future__ import annotations

import json

import pytest

from capevolve._loop.evaluate import evaluate
from capevolve._loop.run import create_run
from capevolve.errors import CandidateError

ADAPTER = '''
from capevolve import Rollout, Score, Task

REQUEST = ("my order {i} arrived with a cracked lid and a missing handle, could you send "
           "a replacement kettle to the address on file before friday please")


class A:
    def tasks(self):
        return [Task(id=f"order_{i:04d}", input=REQUEST.format(i=i),
                     target={"answer": f"refund {i * 7 + 1000} credits",
                             "label": "refund" if i % 2 else "replace"})
                for i in range(16)]

    def run_target(self, candidate, task, *, trial, seed):
        return Rollout(output=(candidate / "prompt.md").read_text())

    def score(self, task, rollout):
        return Score(reward=float(task.target["answer"] in rollout.output))
'''


@pytest.fixture
def run(tmp_path):
    root = tmp_path / "p"
    (root / "seed").mkdir(parents=True)
    (root / "seed" / "prompt.md").write_text("answer politely\n")
    (root / "adapter.py").write_text(ADAPTER)
    (root / "capevolve.yaml").write_text(
        "name: leaks\nadapter: adapter.py:A\ncapability_path: seed\nnum_trials: 1\n"
        "splits: {train: 0.5, val: 0.25, test: 0.25, seed: 0}\n"
        "leak_scan: {ignore: [refund 1000 credits]}\n"
        "engine: {kind: local, concurrency: 2, timeout_s: 20, retries: 0}\n")
    return create_run(root, tmp_path / "run")


def _candidate(tmp_path, text: str):
    cand = tmp_path / "cand"
    cand.mkdir()
    (cand / "prompt.md").write_text(text)
    return cand


def _refused(run, cand) -> tuple[str, list[str]]:
    before = sorted(run.layout.rollouts.rglob("*.parquet"))
    with pytest.raises(CandidateError, match="refused before any rollout") as caught:
        evaluate(run, cand, "val")
    assert sorted(run.layout.rollouts.rglob("*.parquet")) == before  # no rollout ran
    gate = [json.loads(line) for line in run.layout.events.read_text().splitlines()
            if json.loads(line)["kind"] == "gate"][-1]
    assert gate["decision"] == "indecisive"
    return str(caught.value), gate["reasons"]


def _task(run, split: str) -> str:
    return sorted(run.splits.ids(split))[0]


def test_a_val_gold_answer_pasted_into_the_prompt_is_refused(run, tmp_path):
    i = int(_task(run, "val").split("_")[1])
    answer = f"refund {i * 7 + 1000} credits"
    message, reasons = _refused(run, _candidate(tmp_path, f"be kind\nSay: {answer.upper()}\n"))
    assert reasons == ["leak: prompt.md:2: gold value of a val task (a candidate may not "
                       "carry it)"]
    assert answer not in message and answer not in json.dumps(reasons)


def test_a_test_task_id_named_in_the_prompt_is_refused(run, tmp_path):
    message, reasons = _refused(run, _candidate(
        tmp_path, f"if the id is {_task(run, 'test')} answer carefully\n"))
    assert reasons == ["leak: prompt.md:1: task id (a candidate may not carry it)"]
    assert _task(run, "test") not in message


def test_a_long_span_of_a_val_input_is_refused(run, tmp_path):
    i = int(_task(run, "val").split("_")[1])
    span = ("arrived with a cracked lid and a missing handle, could you send a "
            "replacement kettle to the address")
    _, reasons = _refused(run, _candidate(tmp_path, f"example ({i}):\n{span}\n"))
    assert reasons == ["leak: prompt.md:2: span of a task input (a candidate may not "
                       "carry it)"]


@pytest.mark.slow  # one evaluation
def test_labels_short_numbers_and_ignored_values_do_not_count(run, tmp_path):
    """"refund" is the label of many tasks, 12 is short, "refund 1000 credits" (task
    order_0000's answer) is on the project's ignore list."""
    text = "refund or replace; at most 12 items; never say refund 1000 credits\n"
    record = evaluate(run, _candidate(tmp_path, text), "val")
    assert record["status"] == "complete"
