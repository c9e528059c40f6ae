"""The dataset adapter in-process: weighted reward, python evaluators, async targets,
scoreable with and without evaluators that need an expected value."""

import asyncio
import json
from pathlib import Path

import pytest

from capevolve.adapter import Rollout
from capevolve.datasets.adapter import DatasetAdapter
from capevolve.errors import AdapterError


def _project(root: Path, evaluators: str, target: str = "async def answer(q, c):\n"
             "    return q.upper()\n") -> DatasetAdapter:
    root.mkdir()
    (root / "seed").mkdir()
    (root / "data.jsonl").write_text(json.dumps({"id": "a", "input": "x", "expected": "X"})
                                     + "\n" + json.dumps({"id": "b", "input": "y"}) + "\n")
    (root / "target.py").write_text(target)
    (root / "metric.py").write_text("def half(i, o, e):\n    return 0.5\n"
                                    "def bad(i, o, e):\n    return 1.5\n")
    (root / "capevolve.yaml").write_text(
        "name: d\ncapability_path: seed\ndataset: {path: data.jsonl, id: id}\n"
        f"target: target.py:answer\nevaluators:\n{evaluators}")
    return DatasetAdapter(root)


def test_weighted_mean_of_parts_and_an_async_target(tmp_path):
    adapter = _project(tmp_path / "p", "  - {name: ex, kind: exact, weight: 3}\n"
                                       "  - {name: py, kind: python, function: metric.py:half}\n")
    task = adapter.tasks()[0]
    rollout = asyncio.run(adapter.run_target(tmp_path / "p" / "seed", task, trial=0, seed=0))
    assert rollout == Rollout(output="X")
    score = adapter.score(task, rollout)
    assert score.parts == {"ex": 1.0, "py": 0.5}
    assert score.reward == pytest.approx((3 * 1.0 + 0.5) / 4)
    assert "X" not in score.feedback.replace("ex ", "")  # the gold is not quoted


def test_a_python_evaluator_out_of_range_raises(tmp_path):
    adapter = _project(tmp_path / "p", "  - {name: py, kind: python, function: metric.py:bad}\n")
    with pytest.raises(AdapterError, match="evaluator 'py' returned 1.5"):
        adapter.score(adapter.tasks()[0], Rollout(output="X"))


def test_scoreable_follows_the_evaluators_needs(tmp_path):
    adapter = _project(tmp_path / "p", "  - {name: ex, kind: exact}\n")
    a, b = adapter.tasks()
    assert adapter.scoreable(a) and not adapter.scoreable(b)
    assert adapter.exclusion_reason(b) == "no expected value ('expected') for evaluator(s) ex"
    free = _project(tmp_path / "q", "  - {name: py, kind: python, function: metric.py:half,"
                                    " needs_expected: false}\n")
    assert all(free.scoreable(t) for t in free.tasks())
