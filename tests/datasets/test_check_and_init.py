"""init --kind dataset scaffolds a runnable project; check names the metric kinds and
turns a judge's non-determinism into a warning recommending 5 trials."""

import itertools
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures.chat_server import ChatServer, completion
from fixtures.projects import clean_env

import capevolve

EXAMPLE = Path(__file__).resolve().parents[2] / "benchmarks" / "dataset_qa"


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", "from capevolve.cli.app import main; main()", *args], cwd=cwd,
        env=clean_env(), capture_output=True, text=True, timeout=120)


@pytest.mark.slow
def test_init_kind_dataset_is_runnable_and_excludes_its_unlabelled_datapoint(tmp_path):
    done = _cli("init", "proj", "--kind", "dataset", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "data.jsonl" in json.loads(done.stdout)["files"]
    checked = capevolve.check_project(tmp_path / "proj")
    assert checked.ok and checked.n_tasks == 17
    assert checked.metrics == {"deterministic": ["normalized_exact", "token_f1"],
                                  "judge": []}
    bad = _cli("init", "other", "--kind", "nope", cwd=tmp_path)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--kind" in bad.stderr


@pytest.mark.slow
def test_a_non_deterministic_judge_is_a_warning_recommending_five_trials(tmp_path):
    scores = itertools.cycle([1.0, 0.0])
    answer = lambda body: completion(json.dumps(  # noqa: E731
        {"score": next(scores), "justification": "coin"}))
    with ChatServer(default=answer) as server:
        root = tmp_path / "qa"
        shutil.copytree(EXAMPLE, root)
        config = root / "capevolve.yaml"
        config.write_text(config.read_text().replace("http://127.0.0.1:8931/v1",
                                                     server.base_url))
        checked = capevolve.check_project(root)
    assert checked.ok, checked.problems
    assert checked.metrics["judge"] == ["judge"]
    (warning,) = checked.warnings
    assert "not deterministic on task 'q000'" in warning and "num_trials >= 5" in warning
    assert len(server.prompts) == 2  # the judge was probed twice on one datapoint


def test_a_non_deterministic_scorer_without_a_judge_is_still_a_problem(tmp_path):
    root = tmp_path / "qa"
    shutil.copytree(EXAMPLE, root)
    (root / "flaky.py").write_text(
        "import itertools\n_c = itertools.count()\n"
        "def score(i, o, e):\n    return float(next(_c) % 2)\n")
    config = root / "capevolve.yaml"
    text = config.read_text()
    start = text.index("  - name: judge")
    end = text.index("domain_notes:")
    config.write_text(text[:start] + "  - {name: flaky, kind: python, function: flaky.py:score}\n"
                      + text[end:])
    checked = capevolve.check_project(root)
    assert not checked.ok and checked.warnings == []
    assert any("not deterministic" in p for p in checked.problems)


@pytest.mark.slow
def test_an_off_schema_judge_is_a_warning_and_the_run_starts(tmp_path):
    """The probe's off-schema judge answer warns (its rows will be errors); an
    unreachable judge is a problem (nothing could be measured)."""
    with ChatServer(default=completion("I think it is fine.")) as server:
        root = tmp_path / "qa"
        shutil.copytree(EXAMPLE, root)
        config = root / "capevolve.yaml"
        config.write_text(config.read_text().replace("http://127.0.0.1:8931/v1",
                                                     server.base_url))
        checked = capevolve.check_project(root)
        assert checked.ok, checked.problems
        (warning,) = checked.warnings
        assert "breaks the schema" in warning and "error rows" in warning
        run = capevolve.create_run(root, tmp_path / "run")
    assert run.splits.ids("val")
    checked = capevolve.check_project(root)  # the server is gone now
    assert not checked.ok and "judge unreachable" in checked.problems[0]
