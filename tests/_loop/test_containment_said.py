"""What a run says about containment: an opted-out run (``engine.isolation: none``) says
"candidate code was not contained" in status, report.md, report.html and final.json; a run
whose adapter declares run_target_sees_target says candidate code could see the answers;
a contained run says neither."""

from __future__ import annotations

import json

import pytest
from fixtures.projects import make_project

from capevolve._engine import sandbox
from capevolve._loop.containment import NOT_CONTAINED, SEES_TARGET
from capevolve._loop.evaluate import evaluate
from capevolve._loop.finalize import finalize
from capevolve._loop.run import create_run
from capevolve._loop.status import run_status
from capevolve.report.data import report_data
from capevolve.report.html import write_html
from capevolve.report.markdown import write_report

pytestmark = pytest.mark.slow  # an evaluation and a finalize each


def _said(run) -> dict[str, bool]:
    evaluate(run, "seed", "val")
    finalize(run, spend_test_ids=True)
    status = run_status(run)["containment"]
    final = json.loads(run.layout.final.read_text())["containment"]
    markdown = write_report(run)
    html = write_html(run, report_data(run)).read_text()
    return {"status": status, "final": final,
            "md": [w for w in (NOT_CONTAINED, SEES_TARGET) if w in markdown],
            "html": [w for w in (NOT_CONTAINED, SEES_TARGET) if w in html]}


def test_an_uncontained_run_says_so_everywhere(tmp_path):
    run = create_run(make_project(tmp_path / "p", 12, engine={"isolation": "none"}),
                     tmp_path / "run")
    said = _said(run)
    assert said == {"status": [NOT_CONTAINED], "final": [NOT_CONTAINED],
                    "md": [NOT_CONTAINED], "html": [NOT_CONTAINED]}


@pytest.mark.skipif(sandbox.unavailable() is not None, reason="no sandbox here")
def test_a_run_whose_adapter_sees_targets_says_candidate_code_could_see_the_answers(
        tmp_path):
    project = make_project(tmp_path / "p", 12)
    adapter = project / "adapter.py"
    adapter.write_text(adapter.read_text().replace(
        "class FlexAdapter:\n", "class FlexAdapter:\n    run_target_sees_target = True\n"))
    said = _said(create_run(project, tmp_path / "run"))
    assert said == {"status": [SEES_TARGET], "final": [SEES_TARGET], "md": [SEES_TARGET],
                    "html": [SEES_TARGET]}


@pytest.mark.skipif(sandbox.unavailable() is not None, reason="no sandbox here")
def test_a_contained_run_says_nothing(tmp_path):
    said = _said(create_run(make_project(tmp_path / "p", 12), tmp_path / "run"))
    assert said == {"status": [], "final": [], "md": [], "html": []}
