"""The whole-project fingerprint: what it covers, and that a change to any
covered file, between commands or during an evaluation, is refused by name."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import pytest

from capevolve._project.fingerprint import fingerprint, verify
from capevolve._project.loader import load_project
from capevolve.errors import RunDirError

FLEX = Path(__file__).resolve().parents[1] / "fixtures" / "flex_adapter.py"

ADAPTER = '''
import {helpers} as helpers
from capevolve import Rollout, Score, Task


class A:
    def tasks(self):
        return [Task(id=f"t{i:02d}", target="ok") for i in range(12)]

    def run_target(self, candidate, task, *, trial, seed):
        tool = candidate / "tool.py"
        if tool.is_file():  # the candidate's own code, as retail's tools.py is
            exec(compile(tool.read_text(), str(tool), "exec"), {})
        return Rollout(output=helpers.answer(task))

    def score(self, task, rollout):
        from {scorer} import judge  # imported lazily, still fingerprinted

        return Score(reward=judge(task, rollout))
'''


def _uncontained(root: Path) -> Path:
    """The project without the sandbox (``engine.isolation: none``): its candidate then can
    write the project and the run, which the checks behind the sandbox must catch."""
    config = root / "capevolve.yaml"
    config.write_text(config.read_text().replace("retries: 0}", "retries: 0, isolation: none}"))
    return root


def helpers(scorer: str) -> str:
    """The name of the module run_target imports (named unlike a scorer: the sandbox hides
    modules named like one from candidate code)."""
    return scorer.replace("scorer", "tools") + "_helpers"


def _project(root: Path, scorer: str) -> Path:
    """A project whose adapter imports ``helpers(<scorer>)`` and, lazily, ``<scorer>``
    (unique names: modules are cached per process)."""
    (root / "seed").mkdir(parents=True)
    (root / "seed" / "prompt.md").write_text("be good\n")
    (root / "adapter.py").write_text(ADAPTER.replace("{scorer}", scorer)
                                     .replace("{helpers}", helpers(scorer)))
    (root / f"{helpers(scorer)}.py").write_text("def answer(task):\n    return 'ok'\n")
    (root / f"{scorer}.py").write_text(
        "def judge(task, rollout):\n    return 1.0 if rollout.output == task.target else 0.0\n")
    (root / "capevolve.yaml").write_text(
        "name: fp\nadapter: adapter.py:A\ncapability_path: seed\nnum_trials: 1\n"
        "splits: {train: 0.5, val: 0.25, test: 0.25, seed: 0}\n"
        "engine: {kind: local, concurrency: 4, timeout_s: 10, retries: 0}\n")
    return root


def test_covers_imported_modules_lazy_imports_and_protected_data(tmp_path):
    """adapter.py, the module it imports, the scorer imported inside score(), and every
    data file (gold by name or not); not run dirs, the seed, a copy of the seed, or Python
    files the adapter does not import."""
    scorer = f"fp_scorer_{uuid.uuid4().hex[:8]}"
    root = _project(tmp_path / "p", scorer)
    (root / "data").mkdir()
    (root / "data" / "gold.json").write_text("{}")
    (root / "notes.md").write_text("a rubric a scorer could read")
    (root / "make_plots.py").write_text("# not imported by the adapter\n")
    (root / "seed" / "gold_examples.md").write_text("inside the seed")
    shutil.copytree(root / "seed", root / "cand_next")
    (root / ".capevolve" / "run_x").mkdir(parents=True)
    (root / ".capevolve" / "run_x" / "copy_scorer.py").write_text("")
    keys = sorted(fingerprint(load_project(root)))
    assert keys == sorted(["adapter.py", f"{helpers(scorer)}.py", f"{scorer}.py",
                           "data/gold.json", "notes.md"])


def test_an_installed_adapter_package_is_fingerprinted_whole(tmp_path, monkeypatch):
    """An adapter class living in an installed package (module spec ``pkg.adapter:A``):
    every file of that package, data included, is in the fingerprint by absolute path."""
    name = f"fp_pkg_{uuid.uuid4().hex[:8]}"
    site = tmp_path / "lib" / "site-packages"  # installed: a library dir like any other
    pkg = site / name
    (pkg / "data").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "adapter.py").write_text(
        "from . import scorer\nfrom capevolve import Rollout, Task\n\n"
        "class A:\n    def tasks(self):\n        return [Task(id='t')]\n"
        "    def run_target(self, c, t, *, trial, seed):\n        return Rollout(output=1)\n"
        "    def score(self, t, r):\n        return scorer.score(t, r)\n")
    (pkg / "scorer.py").write_text("def score(t, r):\n    return None\n")
    (pkg / "data" / "tasks.json").write_text("[]")
    (site / "some_library.py").write_text("X = 1\n")  # imported too, but not user code
    (pkg / "adapter.py").write_text("import some_library\n" + (pkg / "adapter.py").read_text())
    monkeypatch.syspath_prepend(str(site))
    root = tmp_path / "p"
    (root / "seed").mkdir(parents=True)
    (root / "capevolve.yaml").write_text(f"name: x\nadapter: {name}.adapter:A\n"
                                         "capability_path: seed\n")
    keys = set(fingerprint(load_project(root)))
    expected = {(pkg / f).resolve().as_posix()
                for f in ("__init__.py", "adapter.py", "scorer.py", "data/tasks.json")}
    assert keys == expected


def test_verify_names_the_changed_removed_or_new_file(tmp_path):
    """A changed, a removed and a newly shadowing module are each refused by path."""
    scorer = f"fp_scorer_{uuid.uuid4().hex[:8]}"
    root = _project(tmp_path / "p", scorer)
    project = load_project(root)
    frozen = fingerprint(project)
    verify(project, frozen)
    original = (root / f"{scorer}.py").read_text()
    (root / f"{scorer}.py").write_text("def judge(task, rollout):\n    return 1.0\n")
    with pytest.raises(RunDirError, match=f"{root}/{scorer}.py changed since the run started"):
        verify(project, frozen)
    (root / f"{scorer}.py").unlink()
    with pytest.raises(RunDirError, match=f"{scorer}.py was removed since the run started"):
        verify(project, frozen)
    (root / f"{scorer}.py").write_text(original)
    verify(project, frozen)
    without = {k: v for k, v in frozen.items() if k != f"{helpers(scorer)}.py"}
    with pytest.raises(RunDirError, match="_helpers.py is new since the run started"):
        verify(project, without)
    with pytest.raises(RunDirError, match="records no project fingerprint"):
        verify(project, {})


def test_editing_an_imported_scorer_between_commands_is_refused(tmp_path):
    """Edit the scorer module adapter.py imports after the baseline; the
    next evaluation is refused and names the file."""
    from capevolve._loop.evaluate import evaluate
    from capevolve._loop.run import create_run

    scorer = f"fp_scorer_{uuid.uuid4().hex[:8]}"
    root = _project(tmp_path / "p", scorer)
    run = create_run(root, tmp_path / "run")
    assert f"{scorer}.py" in run.manifest.fingerprint
    assert evaluate(run, "seed", "val")["status"] == "complete"
    (root / f"{scorer}.py").write_text("def judge(task, rollout):\n    return 1.0\n")
    cand = tmp_path / "cand"
    shutil.copytree(root / "seed", cand)
    (cand / "prompt.md").write_text("be better\n")
    with pytest.raises(RunDirError, match=f"{scorer}.py changed since the run started"):
        evaluate(run, cand, "val")


def test_a_candidate_that_rewrites_a_project_file_mid_evaluation_is_caught(tmp_path):
    """Candidate code writing to the project's scorer during its rollouts: the evaluation
    is refused naming the file, stored as refused (never complete), and never resumes,
    even after the file is restored."""
    from capevolve._loop.evaluate import evaluate
    from capevolve._loop.run import create_run
    from capevolve._store.evals import find_eval

    scorer = f"fp_scorer_{uuid.uuid4().hex[:8]}"
    root = _uncontained(_project(tmp_path / "p", scorer))
    original = (root / f"{scorer}.py").read_text()
    run = create_run(root, tmp_path / "run")
    cand = tmp_path / "cand"
    shutil.copytree(root / "seed", cand)
    (cand / "tool.py").write_text(
        f"open({str(root / (scorer + '.py'))!r}, 'w').write("
        "'def judge(task, rollout):\\n    return 1.0\\n')\n")
    with pytest.raises(RunDirError, match=f"{scorer}.py changed .* during the evaluation"):
        evaluate(run, cand, "val")
    [record] = [e for e in run.layout.evals.glob("val__*.json") if "seed" not in e.name]
    stored = find_eval(run, record.stem)
    assert stored.status == "incomplete" and stored.refused
    (root / f"{scorer}.py").write_text(original)
    with pytest.raises(RunDirError, match="refused and never resumes"):
        evaluate(run, stored.candidate_id, "val")


def test_a_lazy_import_of_a_library_submodule_imports_nothing(tmp_path):
    """``import json.tool`` inside a function of the adapter: the library is not followed
    and its parent package is not imported just to fingerprint it."""
    import sys

    scorer = f"fp_scorer_{uuid.uuid4().hex[:8]}"
    root = _project(tmp_path / "p", scorer)
    adapter = root / "adapter.py"
    adapter.write_text(adapter.read_text() + "\n\ndef _later():\n    import xml.dom.minidom\n")
    sys.modules.pop("xml.dom.minidom", None)
    sys.modules.pop("xml.dom", None)
    had_xml = "xml" in sys.modules
    keys = set(fingerprint(load_project(root)))
    assert not any("xml" in k for k in keys)
    assert "xml.dom" not in sys.modules and ("xml" in sys.modules) == had_xml


def test_a_candidate_that_plants_rollout_rows_mid_evaluation_is_caught(tmp_path):
    """Candidate code copying a Parquet part into the run's rollouts during its rollouts:
    the evaluation is refused naming the file, and the planted part is quarantined."""
    from capevolve._loop.evaluate import evaluate
    from capevolve._loop.run import create_run

    scorer = f"fp_scorer_{uuid.uuid4().hex[:8]}"
    root = _uncontained(_project(tmp_path / "p", scorer))
    run = create_run(root, tmp_path / "run")
    evaluate(run, "seed", "val")
    seed_parts = sorted(run.layout.partition("val", "seed").glob("*.parquet"))
    planted = run.layout.partition("val", "seed") / "val__seed__k1-planted-00000.parquet"
    cand = tmp_path / "cand"
    shutil.copytree(root / "seed", cand)
    (cand / "tool.py").write_text(
        "import os, shutil\n"
        f"if not os.path.exists({str(planted)!r}):\n"
        f"    shutil.copy({str(seed_parts[0])!r}, {str(planted)!r})\n")
    with pytest.raises(RunDirError, match="planted-00000.parquet was written during the "
                                          "evaluation"):
        evaluate(run, cand, "val")
    assert not planted.exists()
    assert sorted(run.layout.partition("val", "seed").glob("*.parquet")) == seed_parts
    assert list(run.layout.quarantine().rglob("*planted*"))


def test_a_scorer_data_file_under_any_name_is_covered(tmp_path):
    """A score() that reads expected.json (no scorer/gold in its name): a candidate that
    rewrites it during its rollouts is caught naming it; a new note in the project dir
    between commands is not a change."""
    from capevolve._loop.evaluate import evaluate
    from capevolve._loop.run import create_run

    scorer = f"fp_scorer_{uuid.uuid4().hex[:8]}"
    root = _uncontained(_project(tmp_path / "p", scorer))
    (root / "expected.json").write_text('{"answer": "ok"}')
    run = create_run(root, tmp_path / "run")
    assert "expected.json" in run.manifest.fingerprint
    (root / "NOTES.txt").write_text("an editor's notes")
    evaluate(run, "seed", "val")
    cand = tmp_path / "cand"
    shutil.copytree(root / "seed", cand)
    (cand / "tool.py").write_text(
        f"open({str(root / 'expected.json')!r}, 'w').write('{{\"answer\": \"FORGED\"}}')\n")
    with pytest.raises(RunDirError, match="expected.json changed .* during the evaluation"):
        evaluate(run, cand, "val")
